#!/usr/bin/env bash
# ASan + UBSan run: builds the unit tests, the parser tests and a small CLI subset in
# ./build-asan (g++, warnings are errors, any sanitizer report aborts) and runs them with ctest.
# Only those targets are built, to keep CI short; the ngxtls binary is sanitized too, since
# the CLI tests run it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-asan
start=$(date +%s)
# The parser, the loader and the CLI paths they feed; the rest of the integration suite
# (live nginx, probes) runs unsanitized in scripts/test.sh.
integration=(test_cases_a test_corpus test_parse_cli test_lint_cli)
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# g++ 12 gives false -Wmaybe-uninitialized warnings in std::regex/std::function once the
# sanitizers instrument them (tests/support/nginx_instance.cpp): the warning is meaningless
# here, every other one still fails the build.
warn="-Wno-maybe-uninitialized"
# -O0 -g1: line tables for the reports, no optimisation. The build dominates this script and
# the instrumented template-heavy code (toml11, CLI11, nlohmann::json, doctest) compiles about
# 2.3x faster at -O0 than at -O1; the tests themselves are short either way. Full debug info
# would only slow the build.
# cmake/sanitize.cmake keeps the parser layers at -O1.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
  -DCMAKE_PROJECT_INCLUDE="$PWD/cmake/sanitize.cmake" \
  -DCMAKE_CXX_FLAGS="$san $warn" -DCMAKE_EXE_LINKER_FLAGS="$san" -DNGXTLS_WERROR=ON >/dev/null
targets=(ngxtls "${integration[@]}")
for f in tests/unit/test_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
built=$(date +%s)

# halt_on_error: the first report fails the test; the ctest timeout stays the suite's.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rc=0
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure --timeout 600 -L '^unit$' || rc=1
regex="^($(IFS='|'; echo "${integration[*]}")):"
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure --timeout 600 -R "$regex" || rc=1
end=$(date +%s)
if [ "$rc" -ne 0 ]; then
  echo "sanitize: FAILED (ASan+UBSan; build $((built - start))s, tests $((end - built))s)" >&2
  exit 1
fi
echo "sanitize: OK, unit tests and ${integration[*]} clean under ASan+UBSan (build $((built - start))s, tests $((end - built))s)"
