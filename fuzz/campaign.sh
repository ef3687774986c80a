#!/bin/sh
# The campaign recorded in README.md: for each target (default: all), RUNS executions (default
# 10 000 000) grown from corpus/<target> in a scratch directory, then the edge-cover merge of
# what grew onto corpus/<target> (files already there stay). Prints one summary line per target;
# libFuzzer's own log is left in $OUT/<target>.log and any crash in $OUT/<target>/artifacts/.
#
#   fuzz/campaign.sh [target ...]        RUNS=… OUT=… (default target/campaign)
#
# Built without a sanitizer (`-s none`) and with debug assertions (`-a`): every fuzzed crate
# forbids unsafe code, so AddressSanitizer has nothing of ours to check and costs 3-5x the
# executions; debug assertions turn arithmetic overflow into a crash.
set -eu
cd "$(dirname "$0")"
runs=${RUNS:-10000000}
out=${OUT:-target/campaign}
targets=${*:-$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^cursor-fuzz$')}
cargo +nightly fuzz build -s none -a
bin=target/x86_64-unknown-linux-gnu/release
for t in $targets; do
  rm -rf "$out/$t"
  mkdir -p "$out/$t/grown" "$out/$t/artifacts"
  cp corpus/"$t"/* "$out/$t/grown/"
  start=$(date +%s)
  status=0
  "$bin/$t" -runs="$runs" -print_final_stats=1 -artifact_prefix="$out/$t/artifacts/" \
    "$out/$t/grown" >"$out/$t.log" 2>&1 || status=$?
  wall=$(($(date +%s) - start))
  before=$(ls corpus/"$t" | wc -l)
  "$bin/$t" -set_cover_merge=1 -use_counters=0 -use_value_profile=0 corpus/"$t" "$out/$t/grown" \
    >"$out/$t.merge.log" 2>&1
  echo "$t: exit $status, $(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log") executions" \
    "in ${wall}s, $(ls "$out/$t/artifacts" | wc -l) crashes, corpus $before -> $(ls corpus/"$t" | wc -l) files"
done
