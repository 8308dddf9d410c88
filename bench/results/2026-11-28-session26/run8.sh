#!/usr/bin/env bash
# Session 26 run 8: RegionGpuTest.SplitRows (every candidate of the split rows) after the one-wave candidate was held to two blocks an SM.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64
timeout 200 .carry/b26/codegen_region_gpu_test --gtest_filter='RegionGpuTest.SplitRows' > $OUT/split_rows.txt 2>&1; echo "rc=$?"
grep -E "^\[  |FAILED|Failure" $OUT/split_rows.txt | head; grep -c "split=264" $OUT/split_rows.txt
