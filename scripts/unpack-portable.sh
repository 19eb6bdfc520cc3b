# Sourced by the GPU-machine scripts that run a portable tilec (mla-split-probe.sh,
# w4a16-decode-sweep.sh): unpacks TILEC_ARCHIVE (default .portable/tilec.tar.xz, from
# scripts/portable-tilec.sh) into a fresh directory removed at exit, and sets $tilec to it.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "${TILEC_ARCHIVE:-$root/.portable/tilec.tar.xz}"
tilec=$work/tilec/bin/tilec
