#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_CACHE_DIR=/tmp/kc
mkdir -p $OUT/r1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $OUT/r1/gpu.txt
for g in col_max_768_f32 col_sum_1Mx16_f32 col_mean_11008_f16 col_sum_odd50257_bf16 col_sum_tokens_3d_f32 nhw_sum_nhwc_f16 nhw_mean_nchw_bf16 hw_mean_nhwc_f16 mid_mean_seq_pool_bf16 col_sum_bias_grad_bf16 mid_mean_frames_f32 batch_norm_train_f16 softmax_axis1_16MiB_f32; do
  echo "== $g" >> $OUT/r1/wide.txt
  KILN_WIDE=1 timeout 100 .carry/b26/kiln_wide tune .carry/zoo/$g.json --reps 10 >> $OUT/r1/wide.txt 2>&1
  echo "rc=$?" >> $OUT/r1/wide.txt
done
cd $OUT && tar czf r1.tgz r1
