#!/usr/bin/env bash
# Session 33 run 1: every candidate of the zoo's workloads below 0.80 of the copy, and of the
# four regions above 25% prediction error, timed by kiln tune (L2 flushed): is the default far
# from the fastest candidate (a model or default problem) or are all candidates slow (a template
# problem)?
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
mkdir -p $OUT/r
for w in layer_norm_chw_256k_f32 batch_norm_train_rn50_last_bf16 layer_norm_16x12288_f32 softmax_12x32000_f32 layer_norm_4x1M_f32 softmax_vocab151936_bf16 softmax_classes_nchw_f16 softmax_axis1_16MiB_f32 batch_norm_train_f16 patchify_vit_f16 mid_mean_frames_f32 xent_gpt2_vocab_bf16 softmax_4x1M_f32 log_softmax_vocab128256_bf16 row_sum_odd4095_bf16 softmax_scores_vit197_f16; do
  timeout 90 .carry/gb/bin/kiln tune .carry/zoo/$w.json --reps 15 > $OUT/r/tune_$w.txt 2>&1; echo "== $w rc=$?"; tr '|' '\n' < $OUT/r/tune_$w.txt | grep -E "us" | head -30
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
