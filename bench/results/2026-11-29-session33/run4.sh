#!/usr/bin/env bash
# Session 33 run 4: column tiles whose default split runs as a thread-block cluster (softmax over
# axis 1 of [32, 3000, 96], [64, 8192, 16] and [32, 3000, 16] f32; shapes no kernel was tuned
# on): every candidate timed by kiln tune (L2 flushed), the cluster default against the same
# split merged through global memory. Every column cluster candidate timed so far was 5-500x
# slower than the other candidates.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
mkdir -p $OUT/r
for f in .carry/cc/*.json; do w=$(basename $f .json)
  timeout 120 .carry/gb/bin/kiln tune $f --reps 10 > $OUT/r/tune_$w.txt 2>&1; echo "== $w rc=$?"; tr '|' '\n' < $OUT/r/tune_$w.txt | grep -E "us" | head -30
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
