#!/usr/bin/env bash
# Session 33 run 3: row weights prefetched to L2 by split rows only, one bulk prefetch per
# weight and 16384 columns (run 2's one per thread and 64 columns slowed every norm): kiln tune
# over the split norms (prefetching) and three unsplit ones (not prefetching: level with run 1).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
mkdir -p $OUT/r
for w in layer_norm_chw_256k_f32 layer_norm_4x1M_f32 layer_norm_16x12288_f32 layer_norm_5120_bf16 layer_norm_gpt2_768_bf16 rms_norm_odd4095_bf16; do
  timeout 60 .carry/gb/bin/kiln tune .carry/zoo/$w.json --reps 15 > $OUT/r/tune_$w.txt 2>&1; echo "== $w rc=$?"; tr '|' '\n' < $OUT/r/tune_$w.txt | grep -E "us" | head -12
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
