#!/usr/bin/env bash
# The whole test suite (unit and lit tests, the malformed-input corpus) under AddressSanitizer
# and UndefinedBehaviorSanitizer: installs what is missing, configures BUILD_DIR (default
# build-asan) as a Debug build with g++ -fsanitize=address,undefined, builds everything and runs
# ctest. Any sanitizer report fails the test that triggered it (UBSan halts on the first error,
# LeakSanitizer reports leaks at exit). See docs/fuzzing.md for how long it takes.
#
# Environment: BUILD_DIR, JOBS (default: nproc), CTEST_ARGS (extra ctest arguments).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-asan}
jobs=${JOBS:-$(nproc)}
"$root/scripts/install-deps.sh"

flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" -j "$jobs"

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$build"
# shellcheck disable=SC2086
ctest --output-on-failure -j "$jobs" ${CTEST_ARGS:-}
