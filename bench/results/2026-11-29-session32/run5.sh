#!/usr/bin/env bash
# Session 32 run 5: batch norms over shapes no kernel was tuned on, read and stored through their
# transpose in runs of 7 x 7, 9 x 9 and 14 x 14: every candidate timed (kiln tune, L2 flushed),
# the default against twice its threads (the block rule before this session's change).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
mkdir -p $OUT/r
for f in .carry/bn/*.json; do w=$(basename $f .json); timeout 60 .carry/gb/bin/kiln tune $f --reps 20 > $OUT/r/tune_$w.txt 2>&1; echo "== $w rc=$?"; tr '|' '\n' < $OUT/r/tune_$w.txt | grep -E "us" | head -12; done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
