# Writes OUT_DIR/ngxtls.bash, _ngxtls and ngxtls.fish from `NGXTLS completion SHELL`.
# Usage: cmake -DNGXTLS=BINARY -DOUT_DIR=DIR -P write_completions.cmake
foreach(pair "bash;ngxtls.bash" "zsh;_ngxtls" "fish;ngxtls.fish")
  list(GET pair 0 shell)
  list(GET pair 1 name)
  execute_process(COMMAND ${NGXTLS} completion ${shell} OUTPUT_FILE ${OUT_DIR}/${name}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NGXTLS} completion ${shell} failed: ${rc}")
  endif()
endforeach()
