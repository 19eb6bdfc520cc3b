# Sourced by the A/B scripts (w4a16-ab.sh, attention-ab.sh): unpacks the two tilecs to compare,
# .portable/before.tar.xz (or the archive BEFORE names) and .portable/tilec.tar.xz, into
# $work/before and $work/tilec, a fresh directory that the caller removes.
work=$(mktemp -d)
for which in before tilec; do
  mkdir -p "$work/$which"
  archive=$root/.portable/$which.tar.xz
  [ "$which" = before ] && archive=${BEFORE:-$archive}
  tar -C "$work/$which" -xJf "$archive"
done
