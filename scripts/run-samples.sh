#!/usr/bin/env bash
# The main job: installs what is missing, builds tilec, and compiles every sample in samples/
# to a cubin, a C++ header and a layout report under out/samples/.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" || exit 1
out=$root/out/samples
mkdir -p "$out"
ok=0; failed=0
for f in "$root"/samples/*.tile; do
  name=$(basename "$f" .tile)
  if "$root/build/bin/tilec" compile "$f" -o "$out" --emit cubin,ptx,header,layout 2>"$out/$name.log"; then
    echo "compiled   $name -> $out/$name.{cubin,h,ptx,layout.json}"
    ok=$((ok + 1))
  else
    echo "not yet    $name: $(grep -m1 'error:' "$out/$name.log")"
    failed=$((failed + 1))
  fi
done
echo "samples: $ok compiled, $failed not compiled yet (outputs and logs in $out)"
