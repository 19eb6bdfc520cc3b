#!/usr/bin/env bash
# Installs what building and testing tilec needs, from Debian's packages only. Idempotent: does
# nothing when everything is already there.
set -euo pipefail

packages=(cmake ninja-build ccache g++ python3 llvm-22-dev llvm-22-tools libcli11-dev libfmt-dev
          nlohmann-json3-dev doctest-dev chromium lld-22 libamdhip64-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
