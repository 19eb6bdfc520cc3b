#!/usr/bin/env bash
# The CMake package end to end, without a GPU: installs tilec from BUILD into a temporary prefix,
# moves the prefix (it must be relocatable), configures and builds samples/cmake-app against it
# with find_package(tilec) (cuda.h and libcuda are the fake driver's, tests/fakecuda), checks that
# a second build has nothing to do, then edits the installed std.activations (imported by one of
# the app's kernels) and checks that exactly that kernel's header and the app are rebuilt.
# Usage: package-test.sh SOURCE_DIR BUILD_DIR CXX
set -euo pipefail
src=$1 build=$2 cxx=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mv "$tmp/prefix" "$tmp/moved"
prefix=$tmp/moved
[ -f "$prefix/lib/cmake/tilec/tilecConfig.cmake" ] || fail "no package config installed"

mkdir -p "$tmp/fakecuda"
"$cxx" -std=c++17 -O1 -fPIC -shared "$src/tests/fakecuda/fake_cuda.cpp" -o "$tmp/fakecuda/libcuda.so"
cp -r "$src/samples/cmake-app" "$tmp/app"
cmake -S "$tmp/app" -B "$tmp/app-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DTILEC_CUDA_INCLUDE_DIR="$src/tests/fakecuda" \
  -DTILEC_CUDA_DRIVER_LIBRARY="$tmp/fakecuda/libcuda.so" >"$tmp/configure.log" ||
  { cat "$tmp/configure.log"; fail "configure"; }

cmake --build "$tmp/app-build" >"$tmp/build1.log" 2>&1 || { cat "$tmp/build1.log"; fail "first build"; }
grep -q "tilec: compiling gelu.tile" "$tmp/build1.log" || fail "gelu.tile was not compiled"
grep -q "tilec: compiling axpy.tile" "$tmp/build1.log" || fail "axpy.tile was not compiled"
[ -x "$tmp/app-build/cmake_app" ] || fail "no cmake_app"
grep -q "inline namespace" "$tmp/app-build/tilec/cmake_app/gelu.h" || fail "no gelu.h"
grep -q "constexpr ::std::int64_t block = 1024;" "$tmp/app-build/tilec/cmake_app/axpy.h" ||
  fail "DEFINES did not reach axpy.tile"
grep -q "share/tilec/stdlib/std/activations.tile" "$tmp/app-build/tilec/cmake_app/gelu.d" ||
  fail "gelu.d does not list std.activations"

cmake --build "$tmp/app-build" >"$tmp/build2.log" 2>&1
grep -q "no work to do" "$tmp/build2.log" || { cat "$tmp/build2.log"; fail "second build did work"; }

# Edit the imported stdlib module: gelu.h (and the app) are rebuilt, axpy.h is not.
printf '\n# edited by the package test\n' >> "$prefix/share/tilec/stdlib/std/activations.tile"
cmake --build "$tmp/app-build" >"$tmp/build3.log" 2>&1 || { cat "$tmp/build3.log"; fail "third build"; }
grep -q "tilec: compiling gelu.tile" "$tmp/build3.log" ||
  { cat "$tmp/build3.log"; fail "editing std.activations did not rebuild gelu.h"; }
if grep -q "tilec: compiling axpy.tile" "$tmp/build3.log"; then
  fail "editing std.activations rebuilt axpy.h, which does not import it"
fi
grep -q "Linking CXX executable cmake_app" "$tmp/build3.log" || fail "cmake_app was not relinked"
echo "package test: ok"
