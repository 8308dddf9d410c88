#!/usr/bin/env bash
# Session 35 run 1: kiln tune (every candidate timed, L2 flushed; each beside the cost model's
# prediction for that launch, new in this build) over 44 column-reduction graphs: the zoo's
# column, middle, multi-axis and column-softmax workloads, and shapes no kernel was tuned on
# (.carry/sw, .carry/cc from session 34; .carry/cal, new). The data for refitting the column
# model's ranking of its launch shapes.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
zoo="col_sum_bias_grad_bf16 col_sum_1Mx16_f32 col_mean_11008_f16 col_max_768_f32 col_sum_odd50257_bf16 col_sum_tokens_3d_f32 mid_mean_seq_pool_bf16 mid_sum_heads_bf16 mid_max_points_f32 mid_mean_frames_f32 hw_mean_nhwc_f16 nhw_sum_nhwc_f16 softmax_axis1_16MiB_f32 softmax_classes_nchw_f16 softmax_axis1_frames_f32 layer_norm_channels_first_f32"
for g in .carry/cal/*.json .carry/sw/*.json .carry/cc/*.json $(for w in $zoo; do echo .carry/zoo/$w.json; done); do
  w=$(basename $g .json)
  [ -e $R/tune_$w.txt ] && continue
  timeout 60 .carry/k/bin/kiln tune $g --reps 15 > $R/tune_$w.txt 2>&1
  echo "== $w rc=$? at $(( $(date +%s) - start )) s"; grep -o "tuned on.*" $R/tune_$w.txt | head -1
  [ $(( $(date +%s) - start )) -gt 540 ] && break
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
echo "done at $(( $(date +%s) - start )) s"
