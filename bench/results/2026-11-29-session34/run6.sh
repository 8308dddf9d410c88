#!/usr/bin/env bash
# Session 34 run 6 (and 7, after the candidates kept the streamed family beside a shared default): shapes no kernel was tuned on whose default now keeps column tiles in shared
# memory (four), and two whose default keeps them in registers: every candidate timed (kiln
# tune, L2 flushed), so the new default stands beside the streamed one it replaced.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); R=$OUT/r; mkdir -p $R
for g in .carry/sw/*.json; do
  w=$(basename $g .json)
  timeout 60 .carry/k/bin/kiln tune $g --reps 15 > $R/tune_$w.txt 2>&1
  echo "== $w rc=$?"; tr '|' '\n' < $R/tune_$w.txt | grep -E "us" | sort -t' ' -k1 | cut -c1-110
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
echo "done at $(( $(date +%s) - start )) s"
