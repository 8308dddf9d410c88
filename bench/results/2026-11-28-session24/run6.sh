#!/usr/bin/env bash
# Session 24 run 6: ragged vs dividing vector priced together (sector waste in the fit), both in the tuner's candidates.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b24; A=.carry/b23; G=.carry/s24/g
nvidia-smi --query-gpu=name --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
mkdir -p $OUT/r
timeout 100 python3 bench/ab.py --a old=$A/kiln --b new=$B/kiln --rounds 3 --reps 30 --out $OUT/r/ab $G/colsum_4096x32001_bf16.kir $G/midmean_8x2048x4095_f16.kir $G/gradbias_16384x4095_bf16.kir $G/gradbias_8192x4095_f32.kir /tmp/zoo/col_sum_odd50257_bf16.json > $OUT/r/ab.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep "new/old" $OUT/r/ab.txt
for g in /tmp/zoo/col_sum_odd50257_bf16.json $G/colvarw_16x1024x1001_bf16.kir $G/colsum_16384x999_f32.kir $G/midmax_16x3000x81_f32.kir; do
  timeout 40 $B/kiln tune $g --reps 30 > $OUT/r/tune_$(basename $g).txt 2>&1; echo "tune $(basename $g)"; grep "tuned region" $OUT/r/tune_$(basename $g).txt | sed 's/ | /\n     /g'
done
echo "tune at $(( $(date +%s) - start )) s"
timeout 230 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.ColumnKernels' > $OUT/r/column_test.txt 2>&1
echo "column_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]|Failure" $OUT/r/column_test.txt | head
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
