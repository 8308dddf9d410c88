#!/usr/bin/env bash
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_CACHE_DIR=/tmp/kc
B=.carry/bundle/bin
for g in .carry/z19/*.json; do
  n=$(basename $g .json)
  timeout 100 $B/kiln tune $g --reps 30 > $OUT/tune_$n.txt 2>&1; echo "$n rc=$?"
  tr '|' '\n' < $OUT/tune_$n.txt | grep -E "us" | sed 's/vec=[0-9]* //' | head -40
done
