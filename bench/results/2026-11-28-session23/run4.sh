#!/usr/bin/env bash
# Session 23 run 4: the committed kiln (a8f2c74): GPU tests, graph_diff, the full zoo against torch.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s); B=.carry/b23
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
timeout 200 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.RowsReadThroughATranspose:RegionGpuTest.RowKernelShapeSweep:RegionGpuTest.RowKernelsUnderEveryCandidateParams:RegionGpuTest.LayerNormOfRowsFarFromZero:RegionGpuTest.SmallExamples' > $OUT/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]" $OUT/region_test.txt | head
timeout 60 $B/runtime_executable_gpu_test > $OUT/executable_test.txt 2>&1; echo "executable rc=$?"; tail -1 $OUT/executable_test.txt
timeout 60 $B/kiln_graph_diff --mode gpu --seeds 30:70 > $OUT/graph_diff.txt 2>&1; echo "graph_diff rc=$?"; tail -1 $OUT/graph_diff.txt
timeout 300 python3 bench/zoo.py --kiln $B/kiln --no-tune --json $OUT/zoo.json > $OUT/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^zoo.py\|^$\|warn\|Online\|split the\|Cut an\|important\|softmax.$\|UserWarning" $OUT/zoo.txt | tail -64
echo "done at $(( $(date +%s) - start )) s"
