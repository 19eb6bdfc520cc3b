#!/usr/bin/env bash
# Packs a relocatable tilec: the compiler linked against LLVM's static libraries (so that it runs
# where LLVM 22 is not installed, such as the GPU machine, for `tilec bench` and `tilec tune`),
# with its stdlib beside it as after install.
#
#   scripts/portable-tilec.sh [BUILD] [OUT]    BUILD defaults to build/, OUT to .portable/
#
# Writes OUT/tilec/{bin/tilec,lib/libfmt.so.9,share/tilec/stdlib} and OUT/tilec.tar.xz (about
# 12 MB, to carry). Needs a finished build in BUILD: it only links that build's archives again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/.portable}
llvm_config=${LLVM_CONFIG:-/usr/lib/llvm-22/bin/llvm-config}
[ -x "$build/bin/tilec" ] || { echo "build tilec first (scripts/build.sh)" >&2; exit 1; }

rm -rf "$out/tilec" && mkdir -p "$out/tilec/bin" "$out/tilec/lib" "$out/tilec/share/tilec/stdlib"
archives=$(find "$build/compiler" -name 'libtilec_*.a' | sort)
# The LLVM components tilec uses (the NVPTX and AMDGPU back ends and what they need), linked
# statically.
llvm_libs=$("$llvm_config" --link-static --libs nvptx amdgpu passes ipo codegen target mc asmprinter \
  irreader bitwriter)
fmt_lib=$(ldd "$build/bin/tilec" | awk '/libfmt/ {print $3}')
${CXX:-g++} -O2 -o "$out/tilec/bin/tilec" "$build/compiler/driver/CMakeFiles/tilec.dir/main.cpp.o" \
  -Wl,--start-group $archives -Wl,--end-group -L"$("$llvm_config" --libdir)" $llvm_libs \
  -Wl,--as-needed "$fmt_lib" -l:libzstd.so.1 -lz -lrt -ldl -lm -lpthread -Wl,-rpath,'$ORIGIN/../lib'
strip "$out/tilec/bin/tilec"
cp -L "$fmt_lib" "$out/tilec/lib/"
cp -r "$root/stdlib/std" "$out/tilec/share/tilec/stdlib/"
# No LLVM library may remain a dependency.
if ldd "$out/tilec/bin/tilec" | grep -q libLLVM; then
  echo "portable-tilec: the binary still needs libLLVM" >&2
  exit 1
fi
tar -C "$out" -cf - tilec | xz -T2 -6 > "$out/tilec.tar.xz"
echo "portable-tilec: $out/tilec.tar.xz ($(du -h "$out/tilec.tar.xz" | cut -f1))"
