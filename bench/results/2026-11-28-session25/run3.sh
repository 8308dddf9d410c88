#!/usr/bin/env bash
# Session 25 run 3: staged cp.async waits in the first pass over a shared-memory row cache, and a split cluster barrier at the end of a row: GPU tests, sanitizers, A/B against 7d21e22.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); A=.carry/b25; B=.carry/b25n; G=.carry/s25/g
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null; Z=/tmp/zoo
mkdir -p $OUT/r
timeout 240 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.SmallExamples:RegionGpuTest.RowKernelShapeSweep:RegionGpuTest.RowKernelsUnderEveryCandidateParams:RegionGpuTest.SplitRows:RegionGpuTest.LayerNormOfRowsFarFromZero:RegionGpuTest.RowsReadThroughATranspose' > $OUT/r/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]|Failure|OK \]" $OUT/r/region_test.txt | head -20
for g in $G/*.json $Z/log_softmax_9x50257_f32.json $Z/group_norm_sd_f16.json $Z/batch_norm_train_f16.json; do timeout 60 $B/kiln run $g --check --random 2 > $OUT/r/check_$(basename $g .json).txt 2>&1; echo -n "check $(basename $g .json) rc=$? "; done; echo
for t in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $t $B/kiln run $Z/log_softmax_9x50257_f32.json --check --random 1 > $OUT/r/${t}.txt 2>&1; echo "$t rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" $OUT/r/${t}.txt | head -3
done
echo "at $(( $(date +%s) - start )) s"
timeout 330 python3 bench/ab.py --a old=$A/kiln --b new=$B/kiln --rounds 3 --reps 30 --out $OUT/r/ab \
  $Z/softmax_vocab151936_bf16.json $Z/log_softmax_vocab128256_bf16.json $Z/softmax_vocab32000_bf16.json $Z/softmax_vocab50257_f16.json \
  $Z/layer_norm_chw_256k_f32.json $Z/batch_norm_train_f16.json $Z/group_norm_sd_f16.json $Z/log_softmax_9x50257_f32.json \
  $G/*.json examples/layernorm.json examples/softmax.json > $OUT/r/ab.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep "new/old\|/old" $OUT/r/ab.txt | head -40
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
