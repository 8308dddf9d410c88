#!/usr/bin/env bash
# Session 24 run 1: ragged column vectors (odd inner extents) on the GPU: values, memcheck, A/B, zoo row.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s); B=.carry/b24; A=.carry/b23; G=.carry/s24/g
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
mkdir -p $OUT/r
timeout 240 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.ColumnKernels' > $OUT/r/column_test.txt 2>&1
echo "column_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]|Failure" $OUT/r/column_test.txt | head
for g in colsum_7x37_bf16 colnormw_3x300x37_f16 colsoftmax_3x77x1001_f16; do
  timeout 60 compute-sanitizer --tool memcheck $B/kiln run $G/$g.kir --check --random 3 > $OUT/r/memcheck_$g.txt 2>&1
  echo "memcheck $g rc=$?"; grep -E "ERROR SUMMARY|mismatch|ok|FAIL" $OUT/r/memcheck_$g.txt | head -4
done
for g in $G/*.kir; do timeout 30 $B/kiln run $g --check --random 1 > $OUT/r/check_$(basename $g .kir).txt 2>&1; echo "check $(basename $g) rc=$?"; done
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
timeout 200 python3 bench/ab.py --a old=$A/kiln --b new=$B/kiln --rounds 3 --out $OUT/r/ab /tmp/zoo/col_sum_odd50257_bf16.json $G/colsum_4096x32001_bf16.kir $G/colsum_8192x1001_f32.kir $G/midmean_8x2048x4095_f16.kir $G/gradbias_16384x4095_bf16.kir $G/colnormw_16x1024x1001_bf16.kir > $OUT/r/ab.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; tail -8 $OUT/r/ab.txt
timeout 60 $B/kiln tune /tmp/zoo/col_sum_odd50257_bf16.json --reps 30 > $OUT/r/tune.txt 2>&1; tail -16 $OUT/r/tune.txt
timeout 100 python3 bench/zoo.py --kiln $B/kiln --no-tune --only col_sum_odd50257_bf16,col_sum_bias_grad_bf16,col_mean_11008_f16 --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$?"; grep -v "^zoo.py\|^$\|warn\|Online\|split the\|Cut an\|important\|softmax.$\|UserWarning" $OUT/r/zoo.txt | tail -6
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
