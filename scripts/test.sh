#!/usr/bin/env bash
# Installs what is missing, builds tilec and its tests, and runs every test (unit and lit)
# through ctest. This is what CI runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
cd "${BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "$(nproc)"
