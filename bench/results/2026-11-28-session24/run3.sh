#!/usr/bin/env bash
# Session 24 run 3: two-stage word select, clamped rows only for ragged bodies: values, memcheck, A/B over every column row.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s); B=.carry/b24; A=.carry/b23; G=.carry/s24/g
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
mkdir -p $OUT/r
for g in colsum_8x37_bf16 colnormw_4x300x37_f16 colsoftmax_8x77x1001_f16; do
  timeout 60 compute-sanitizer --tool memcheck $B/kiln run $G/$g.kir --check --random 3 > $OUT/r/memcheck_$g.txt 2>&1
  echo "memcheck $g rc=$?"; grep -E "ERROR SUMMARY|check " $OUT/r/memcheck_$g.txt | head -3
done
for g in $G/*.kir; do timeout 30 $B/kiln run $g --check --random 1 > $OUT/r/check_$(basename $g .kir).txt 2>&1; echo "check $(basename $g) rc=$?"; done
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
Z=/tmp/zoo
timeout 330 python3 bench/ab.py --a old=$A/kiln --b new=$B/kiln --rounds 3 --reps 30 --out $OUT/r/ab $G/colsum_4096x32001_bf16.kir $G/colsum_8192x1001_f32.kir $G/midmean_8x2048x4095_f16.kir $G/gradbias_16384x4095_bf16.kir $G/colnormw_16x1024x1001_bf16.kir \
  $Z/col_sum_odd50257_bf16.json $Z/col_max_768_f32.json $Z/col_mean_11008_f16.json $Z/col_sum_1Mx16_f32.json $Z/col_sum_bias_grad_bf16.json $Z/col_sum_tokens_3d_f32.json $Z/hw_mean_nhwc_f16.json $Z/layer_norm_channels_first_f32.json $Z/mid_max_points_f32.json $Z/mid_mean_frames_f32.json $Z/mid_mean_seq_pool_bf16.json $Z/mid_sum_heads_bf16.json $Z/nhw_sum_nhwc_f16.json $Z/softmax_axis1_16MiB_f32.json $Z/softmax_classes_nchw_f16.json > $OUT/r/ab.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep "new/old" $OUT/r/ab.txt
timeout 200 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.ColumnKernels' > $OUT/r/column_test.txt 2>&1
echo "column_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]|Failure" $OUT/r/column_test.txt | head
mkdir -p $OUT/r/ncu
for g in col_sum_odd50257_bf16; do
  for side in A B; do bin=$A; [[ $side == B ]] && bin=$B
  timeout 60 ncu --kernel-name regex:kiln_ --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats \
    $bin/kiln bench /tmp/zoo/$g.json --no-tune --reps 5 > $OUT/r/ncu/${g}_$side.txt 2>&1
  echo "ncu $g $side"; grep -E "DRAM Throughput|Duration|Achieved Occupancy|Registers Per|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued|Stall Long|Executed Instructions  " $OUT/r/ncu/${g}_$side.txt | head -12
  done
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
