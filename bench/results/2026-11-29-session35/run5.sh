#!/usr/bin/env bash
# Session 35 run 5: evidence for a per-kernel ramp in the model. kiln bench --flush-l2 (with
# the same-size copy in the same process) on small regions of three kinds, pointwise add,
# row sum, column sum, from 32 KB to 64 MB; `kiln dump --measured` then sets each beside its
# prediction (offline).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
tar xzf .carry/gbz/gb.tgz -C .carry
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); R=$OUT/r; mkdir -p $R
for g in .carry/ramp/*.json; do
  w=$(basename $g .json)
  timeout 40 .carry/gb/bin/kiln bench $g --no-tune --flush-l2 --reps 50 --json $R/$w.json > $R/$w.txt 2>&1
  echo "== $w rc=$? $(grep -iE "end to end|same-size" $R/$w.txt | head -2 | tr '\n' ' ' | cut -c1-160)"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
echo "done at $(( $(date +%s) - start )) s"
