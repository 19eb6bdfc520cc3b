#!/usr/bin/env bash
# Configures and builds tilec into build/ (Ninja, ccache, Release with assertions off).
# BUILD_DIR and BUILD_TYPE override the defaults.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
type=${BUILD_TYPE:-Release}
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" >/dev/null
cmake --build "$build" -j "$(nproc)"
