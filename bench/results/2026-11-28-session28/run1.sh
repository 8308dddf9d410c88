#!/usr/bin/env bash
# Session 28 run 1: kiln tune with one- and two-warp column blocks; ncu source counters of the gap kernels.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_CACHE_DIR=/tmp/kc
start=$(date +%s); B=.carry/b28; Z=.carry/zoo
mkdir -p $OUT/r
for g in softmax_classes_nchw_f16 col_max_768_f32 col_sum_odd50257_bf16 nhw_sum_nhwc_f16 hw_mean_nhwc_f16 mid_mean_seq_pool_bf16 col_mean_11008_f16 mid_mean_frames_f32 softmax_axis1_16MiB_f32 layer_norm_channels_first_f32 col_sum_1Mx16_f32; do
  echo "== $g" >> $OUT/r/tune.txt
  timeout 70 $B/kiln tune $Z/$g.json --reps 15 >> $OUT/r/tune.txt 2>&1; echo "rc=$?" >> $OUT/r/tune.txt
done
echo "tune done at $(( $(date +%s) - start )) s"
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats --section SourceCounters"
for spec in "batch_norm_train_f16:kiln_row_" "softmax_vocab151936_bf16:kiln_row_" "layer_norm_chw_256k_f32:kiln_row_" "softmax_classes_nchw_f16:kiln_col_"; do
  g=${spec%%:*}; k=${spec##*:}
  timeout 100 ncu --kernel-name regex:$k --launch-skip 3 --launch-count 1 $S -o $OUT/r/ncu_$g $B/kiln bench $Z/$g.json --no-tune --reps 5 > $OUT/r/ncu_${g}.log 2>&1; echo "ncu $g rc=$?"
  ncu -i $OUT/r/ncu_$g.ncu-rep --print-details all > $OUT/r/ncu_${g}.txt 2>&1
  ncu -i $OUT/r/ncu_$g.ncu-rep --page source --print-source sass --csv > $OUT/r/sass_${g}.csv 2>&1
  rm -f $OUT/r/ncu_$g.ncu-rep
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
