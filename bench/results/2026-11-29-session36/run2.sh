#!/usr/bin/env bash
# Session 36 run 2: column candidates bounded to the model's residency (__launch_bounds__ with
# min blocks = the blocks an SM the model prices, for the default and the four shapes it prices
# lowest), kiln tune (every candidate timed, L2 flushed, with ptxas's registers) over 20 column
# graphs (.carry/r7: zoo column classes and unseen shapes).
tar xzf .carry/gbz/gb.tgz -C .carry
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); mkdir -p $OUT/r
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/r/gpu.txt 2>&1
for g in .carry/r7/*.json; do
  w=$(basename $g .json)
  timeout 60 .carry/gb/bin/kiln tune $g --reps 15 > $OUT/r/tune_$w.txt 2>&1
  echo "== $w rc=$? at $(( $(date +%s) - start )) s: $(grep -o '[0-9.]* us (pred [0-9.]*) \[[^]]*\] (default)' $OUT/r/tune_$w.txt)"
  [ $(( $(date +%s) - start )) -gt 540 ] && break
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
