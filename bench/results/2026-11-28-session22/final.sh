#!/usr/bin/env bash
# Session 22 final: full zoo against torch (H100), then the column GPU test with the odd extents.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s); B=.carry/b22
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
timeout 330 python3 bench/zoo.py --kiln $B/kiln --no-tune --json $OUT/zoo.json > $OUT/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^zoo.py\|^$\|warn\|Online\|split the\|Cut an\|important\|softmax.$\|UserWarning" $OUT/zoo.txt | tail -64
timeout 200 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.ColumnKernels' > $OUT/column_test.txt 2>&1
echo "column_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED" $OUT/column_test.txt | head; grep -c "max|err|" $OUT/column_test.txt
echo "done at $(( $(date +%s) - start )) s"
