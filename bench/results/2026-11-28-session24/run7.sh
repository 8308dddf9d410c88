#!/usr/bin/env bash
# Session 24 run 7: ragged vectors forced on regions with full-space outputs (StoreVecAt), every candidate shape.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b24
mkdir -p $OUT/r
timeout 150 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.RaggedColumnsWithFullSpaceOutputs' > $OUT/r/ragged_full_test.txt 2>&1
echo "test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]|Failure|^\[       OK" $OUT/r/ragged_full_test.txt | head; grep -c "ok\b" $OUT/r/ragged_full_test.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
