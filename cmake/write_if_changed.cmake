# ngxtls_write_if_changed(PATH TEXT): writes TEXT to PATH unless PATH already holds it, so that
# a generated source whose inputs did not change keeps its time stamp and its dependants do not
# rebuild. Used by the embed_*.cmake scripts.
function(ngxtls_write_if_changed path text)
  if(EXISTS ${path})
    file(READ ${path} old)
    if(old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE ${path} "${text}")
endfunction()
