#!/usr/bin/env bash
# Runs one libFuzzer target of tests/fuzz for a while (see docs/fuzzing.md).
#
#   scripts/fuzz.sh TARGET SECONDS     TARGET: lexer, parser, sema, compile or thir (or fuzz_lexer ...)
#
# Installs clang-22 and libclang-rt-22-dev when missing, configures BUILD_DIR (default
# build-fuzz) with clang-22 and -DTILEC_BUILD_FUZZERS=ON, builds the target and runs it for
# SECONDS with -max_len=8192 -timeout=10 -rss_limit_mb=2048 and the dictionary tests/fuzz/tile.dict
# (thir.dict and the .thir files of tests/lit as seeds for the thir target).
# The work corpus (BUILD_DIR/fuzz-corpus/TARGET) starts with the inputs of
# tests/fuzz/corpus/TARGET.tar.xz and keeps growing between runs; the seeds (samples,
# conformance programs, lit and malformed tests) are read every run. New crash, leak, timeout and out-of-memory inputs are copied to
# tests/fuzz/crashes/ (reproduce one: BUILD_DIR/fuzz/fuzz_TARGET FILE).
#
# Environment: BUILD_DIR, JOBS (build parallelism, default 2), NICE (default 10),
# SAVE_CORPUS=1 (after the run, rewrite tests/fuzz/corpus/TARGET.tar.xz with the inputs of the
# work corpus that add coverage; SECONDS may be 0 to only do that).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
mkdir -p "$build" && build=$(cd "$build" && pwd)
jobs=${JOBS:-2}
niceness=${NICE:-10}

usage() { echo "usage: $0 lexer|parser|sema|compile|thir SECONDS" >&2; exit 2; }
[ $# -eq 2 ] || usage
target=${1#fuzz_}
seconds=$2
case "$target" in lexer | parser | sema | compile | thir) ;; *) usage ;; esac
# The thir target reads thread IR text; the others read .tile sources.
suffix=tile
dict=tile.dict
if [ "$target" = thir ]; then
  suffix=thir
  dict=thir.dict
fi
[[ "$seconds" =~ ^[0-9]+$ ]] || usage

"$root/scripts/install-deps.sh"
missing=()
for p in clang-22 libclang-rt-22-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
  echo "fuzz: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# A build directory configured with another compiler cannot be switched to clang in place.
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^TILEC_BUILD_FUZZERS:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "fuzz: $build is configured without TILEC_BUILD_FUZZERS; set BUILD_DIR to another directory" >&2
  exit 1
fi
# -O1 keeps the fuzzers fast while assertions stay on (Debug, no NDEBUG).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_COMPILER=clang++-22 \
  -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DTILEC_BUILD_FUZZERS=ON -DTILEC_BUILD_TESTS=OFF >/dev/null
nice -n "$niceness" cmake --build "$build" -j "$jobs" --target "fuzz_$target"

fuzzer=$build/fuzz/fuzz_$target
work=$build/fuzz-corpus/$target
seeds=$build/fuzz-seeds
artifacts=$build/fuzz-artifacts/$target
mkdir -p "$work" "$artifacts" "$root/tests/fuzz/crashes"
# The saved corpus (inputs that add coverage, merged from earlier runs) seeds the work corpus.
saved=$root/tests/fuzz/corpus/$target.tar.xz
if [ -f "$saved" ]; then
  tar -xJf "$saved" -C "$work" --strip-components=1 --skip-old-files
fi
# The seeds, named by content so that repeated runs do not duplicate them.
rm -rf "$seeds" && mkdir -p "$seeds"
{
  find "$root/samples" "$root/tests/lit" "$root/tests/malformed" -name "*.$suffix" -type f
  if [ -d "$root/../shared/conformance" ]; then
    find "$root/../shared/conformance" -name "*.$suffix" -type f
  fi
} | while read -r f; do
  cp "$f" "$seeds/$(sha1sum "$f" | cut -c1-40)"
done
echo "fuzz: $target for ${seconds}s; work corpus $(ls "$work" | wc -l) inputs, $(ls "$seeds" | wc -l) seeds"

before=$(ls "$artifacts")
status=0
# The work corpus comes first: libFuzzer writes new inputs into the first directory only.
if [ "$seconds" -gt 0 ]; then
  (cd "$artifacts" && nice -n "$niceness" "$fuzzer" "$work" "$seeds" \
    -dict="$root/tests/fuzz/$dict" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
    -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$artifacts/") || status=$?
fi

new=0
for f in $(ls "$artifacts"); do
  if ! grep -qxF "$f" <<<"$before"; then
    cp "$artifacts/$f" "$root/tests/fuzz/crashes/$target-$f"
    echo "fuzz: new artifact tests/fuzz/crashes/$target-$f"
    new=$((new + 1))
  fi
done

if [ "${SAVE_CORPUS:-0}" = 1 ]; then
  merged=$build/fuzz-merged/$target
  rm -rf "$merged" && mkdir -p "$merged" "$root/tests/fuzz/corpus"
  nice -n "$niceness" "$fuzzer" -merge=1 -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
    "$merged" "$work" 2>&1 | tail -1
  # Reproducible archive: sorted names, fixed times and owners.
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$(dirname "$merged")" \
    -cJf "$saved" "$target"
  echo "fuzz: $saved holds $(ls "$merged" | wc -l) inputs ($(du -h "$saved" | cut -f1))"
fi
echo "fuzz: $target exited with $status; $new new artifact(s)"
exit "$status"
