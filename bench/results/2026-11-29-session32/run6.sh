#!/usr/bin/env bash
# Session 32 run 6: the streamed row kernels of the zoo (default: 2 vectors in flight per thread),
# every candidate timed by kiln tune (4 and 8 in flight among them), L2 flushed.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
mkdir -p $OUT/r
for w in nhw_mean_nchw_bf16 xent_gpt2_vocab_bf16 amax_all_bf16 softmax_vocab151936_bf16 log_softmax_vocab128256_bf16; do timeout 90 .carry/gb/bin/kiln tune .carry/zoo/$w.json --reps 20 > $OUT/r/tune_$w.txt 2>&1; echo "== $w rc=$?"; tr '|' '\n' < $OUT/r/tune_$w.txt | grep -E "us" | head -16; done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
