#!/usr/bin/env bash
# Installs what is missing, builds tilec and its tests, and runs every test (unit and lit)
# through ctest; then the same suite once more under ASan + UBSan (scripts/sanitize.sh, about
# 5 minutes more on 2 cores; SANITIZE=0 skips it). This is what CI runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
(cd "${BUILD_DIR:-$root/build}" && ctest --output-on-failure -j "$(nproc)")
if [ "${SANITIZE:-1}" != 0 ]; then
  BUILD_DIR="$root/build-asan" "$root/scripts/sanitize.sh"
fi
