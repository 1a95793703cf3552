# Included by scripts/sanitize.sh through CMAKE_PROJECT_INCLUDE; not used by any other build.
# That ASan+UBSan build compiles at -O0, which halves its compile time, except the layers on the
# parser's hot path: PEGTL's template stack is not inlined at -O0, and the 100 MB tests
# (test_loader, test_lint_cli) then run many times slower than at -O1.
# Deferred to the end of the top-level directory, once those targets exist (arguments of a
# deferred call are expanded when it runs, hence no loop variable); -O1 comes after
# CMAKE_CXX_FLAGS_DEBUG on the command line, so it wins.
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL target_compile_options ngxtls_base PRIVATE -O1)
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL target_compile_options ngxtls_config PRIVATE -O1)
