#!/usr/bin/env bash
# Session 27 run 5: compute-sanitizer (memcheck, racecheck, synccheck) on the TMA attention kernel's small GPU tests.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
T=.carry/gb/bin/codegen_region_gpu_test
F='AttentionGpuTest.ProjectionLayoutsFoldIntoLoadsAndStore:AttentionGpuTest.HeadDimsAndBatchHeads'
for tool in memcheck racecheck synccheck; do
  start=$(date +%s)
  timeout 170 compute-sanitizer --tool $tool --error-exitcode 9 $T --gtest_filter="$F" > $OUT/sanitizer_$tool.txt 2>&1
  echo "$tool rc=$? in $(( $(date +%s) - start )) s"; grep -E "ERROR SUMMARY|PASSED|FAILED|OK \]" $OUT/sanitizer_$tool.txt | tail -4
done
