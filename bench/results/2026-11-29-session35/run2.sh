#!/usr/bin/env bash
# Session 35 run 2: the build with the column block chain in the model (ColumnBlockChainUs).
# scripts/gpu-check, tests part (every candidate of the GPU tests' regions against the
# interpreter), then kiln tune again over run 1's 39 column graphs: the new defaults timed
# beside every candidate, with the model's prediction for each.
tar xzf .carry/gbz/gb.tgz -C .carry
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s); R=$OUT/r; mkdir -p $R
KILN_GPU_CHECK_OUT=$R/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 330 scripts/gpu-check --bundle .carry/gbx > $R/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "passed|failed" $R/gpu_check.txt | grep -v " 0 failed" | tail -5; grep -E "cases" $R/gpu_check.txt | tail -2
tar czf $R/gc.tgz -C $R gpu-check 2>/dev/null && rm -rf $R/gpu-check
zoo="col_sum_bias_grad_bf16 col_sum_1Mx16_f32 col_mean_11008_f16 col_max_768_f32 col_sum_odd50257_bf16 col_sum_tokens_3d_f32 mid_mean_seq_pool_bf16 mid_sum_heads_bf16 mid_max_points_f32 mid_mean_frames_f32 hw_mean_nhwc_f16 nhw_sum_nhwc_f16 softmax_axis1_16MiB_f32 softmax_classes_nchw_f16 softmax_axis1_frames_f32 layer_norm_channels_first_f32"
for g in .carry/cal/*.json .carry/sw/*.json .carry/cc/*.json $(for w in $zoo; do echo .carry/zoo/$w.json; done); do
  w=$(basename $g .json)
  [ -e $R/tune_$w.txt ] && continue
  [ $(( $(date +%s) - start )) -gt 560 ] && break
  timeout 40 .carry/k/bin/kiln tune $g --reps 15 > $R/tune_$w.txt 2>&1
  echo "== $w rc=$? $(grep -o '[0-9.]* us (pred [0-9.]*) (default)' $R/tune_$w.txt | head -1)"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
echo "done at $(( $(date +%s) - start )) s"
