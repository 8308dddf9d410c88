#!/usr/bin/env bash
# Session 31 run 5: every candidate of layer_norm over 44 and 33 rows of 262144 f32 (run 4: 44
# rows at 0.46 of the copy, split 6 with 180 KB of shared memory, one block an SM), L2 flushed.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
R=bench/results/2026-11-29-session31
mkdir -p $OUT/r
for b in ln_44x262144_f32 ln_33x262144_f32 ln_66x262144_f32; do
  timeout 100 .carry/gb/bin/kiln tune $R/rows/$b.json --reps 15 > $OUT/r/tune_$b.txt 2>&1
  echo "== tune $b rc=$?"; tr '|' '\n' < $OUT/r/tune_$b.txt | grep -v "^ *$" | tail -n +2
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
