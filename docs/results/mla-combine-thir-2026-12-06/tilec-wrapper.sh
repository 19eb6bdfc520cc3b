#!/bin/bash
# Stands in for tilec in scripts/mla-split-launch-ab.sh: compiles /tmp/mla/v/ufull/mla_decode_split.thir
# (hand-edited thread IR) in place of the .tile the script names, with the script's other options.
if [ "$1" = compile ]; then
  shift 2
  args=()
  while [ $# -gt 0 ]; do case "$1" in -D) shift 2 ;; *) args+=("$1"); shift ;; esac; done
  exec /work/main/build/bin/tilec compile /tmp/mla/v/ufull/mla_decode_split.thir "${args[@]}"
fi
exec /work/main/build/bin/tilec "$@"
