#!/usr/bin/env bash
# Several programs (or probes of one) timed by `tilec bench` in turn, ROUNDS times (default 2),
# so that they compare within one run. On the GPU machine, with a portable tilec carried
# (scripts/portable-tilec.sh; TILEC_ARCHIVE, default .portable/tilec.tar.xz):
#   SHAPE=M=16,N=8192,K=8192 OUT=$OUT scripts/bench-files.sh FILE[:-D NAME=VALUE...]...
# e.g. tests/gpu/kernels/w4a16_words.tile:"-D num_stages=4". REPS (default 100) launches each.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/bench-files}
mkdir -p "$out"
exec > >(tee "$out/bench-files.txt") 2>&1
[ $# -gt 0 ] || { echo "usage: $0 FILE[:OPTIONS]..."; exit 1; }
# shellcheck source=scripts/unpack-portable.sh
source "$root/scripts/unpack-portable.sh"
echo "$("$tilec" --version 2>&1 | head -1); $(nvidia-smi --query-gpu=name --format=csv,noheader)"
for round in $(seq "${ROUNDS:-2}"); do
  for spec in "$@"; do
    file=${spec%%:*} options=
    [ "$file" != "$spec" ] && options=${spec#*:}
    printf 'round %s %s %s: ' "$round" "$file" "$options"
    # shellcheck disable=SC2086 # the options are words
    "$tilec" bench "$file" $options --shape "${SHAPE:?set SHAPE}" --reps "${REPS:-100}" |
      grep -E "median" | tr -s ' ' || echo "(failed)"
  done
done
