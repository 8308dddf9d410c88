#!/usr/bin/env bash
# Session 31 run 4: the long-row defaults over a sweep of row counts (layer_norm over 262144 f32,
# softmax over 151936 bf16): time per row and the same-size copy, to separate a per-wave fixed
# cost from the bytes (L2 flushed).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
R=bench/results/2026-11-29-session31
mkdir -p $OUT/r
for g in $R/rows/*.json; do
  b=$(basename $g .json)
  timeout 60 .carry/gb/bin/kiln bench $g --no-tune --flush-l2 --reps 20 --device h200 > $OUT/r/bench_$b.txt 2>&1
  echo "$b rc=$?: $(grep -oE 'graph: [0-9.]+ us measured, [0-9.]+ us predicted' $OUT/r/bench_$b.txt) | $(grep -oE 'same-size copy: [0-9.]+ us' $OUT/r/bench_$b.txt) | $(grep -oE 'copy / time = [0-9.]+' $OUT/r/bench_$b.txt)"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
