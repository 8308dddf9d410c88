#!/usr/bin/env bash
# Session 28 run 2: cuBLASLt candidates timed; GPU tests of the column and attention changes; A/B of the one-exponential column step.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_CACHE_DIR=/tmp/kc
start=$(date +%s); B=.carry/b28; Z=.carry/zoo
mkdir -p $OUT/r
timeout 120 $B/lt_algos > $OUT/r/lt_algos.txt 2>&1; echo "lt rc=$? at $(( $(date +%s) - start )) s"; cat $OUT/r/lt_algos.txt | cut -c1-160
timeout 300 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.ColumnKernels:RegionGpuTest.RaggedColumns*:AttentionGpuTest.*' > $OUT/r/gpu_test.txt 2>&1; echo "gpu test rc=$? at $(( $(date +%s) - start )) s"; tail -3 $OUT/r/gpu_test.txt
for round in 1 2; do for v in kiln_base kiln; do for g in softmax_classes_nchw_f16 softmax_axis1_16MiB_f32; do
  echo "== $round $v $g" >> $OUT/r/ab.txt
  timeout 60 $B/$v bench $Z/$g.json --no-tune --flush-l2 --reps 50 --device h200 >> $OUT/r/ab.txt 2>&1
done; done; done
echo "ab done at $(( $(date +%s) - start )) s"
grep -E "^==|graph|median" $OUT/r/ab.txt | head -40
timeout 90 $B/kiln tune $Z/softmax_classes_nchw_f16.json --reps 15 > $OUT/r/tune_classes.txt 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
