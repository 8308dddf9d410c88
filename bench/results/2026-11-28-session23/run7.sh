#!/usr/bin/env bash
# Session 23 run 7: what run 6 cut short: ColumnKernels and graph_diff on the committed kiln (49b5858).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b23; R=/tmp/r7; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 100 $B/kiln_graph_diff --mode gpu --seeds 70:110 > $R/graph_diff.txt 2>&1; echo "graph_diff rc=$?"; tail -1 $R/graph_diff.txt
timeout 230 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.ColumnKernels:RegionGpuTest.SplitRows' > $R/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[ +(OK|FAILED) \]|^\[  (PASSED|FAILED) " $R/region_test.txt | head
tar czf $OUT/run7.tgz -C /tmp r7
