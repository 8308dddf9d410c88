#!/usr/bin/env bash
# Session 23 run 1: reductions over several runs read through a transpose. GPU tests, graph_diff,
# A/B old vs new, and the two zoo rows against torch.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s); B=.carry/b23; S=.carry/s23
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
timeout 240 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.RowsReadThroughATranspose:RegionGpuTest.SmallExamples:RegionGpuTest.SplitRows' > $OUT/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]|Failure" $OUT/region_test.txt | head -20
timeout 60 $B/runtime_executable_gpu_test > $OUT/executable_test.txt 2>&1; echo "executable rc=$?"; tail -2 $OUT/executable_test.txt
timeout 60 $B/kiln_graph_diff --mode gpu --seeds 0:30 > $OUT/graph_diff.txt 2>&1; echo "graph_diff rc=$?"; tail -3 $OUT/graph_diff.txt
G="/tmp/zoo/batch_norm_train_f16.json /tmp/zoo/nhw_mean_nchw_bf16.json $S/bn_bf16_32x256x56x56.kir $S/bn_f32_8x128x28x28.kir $S/bn_f16_16x64x56x56.kir $S/bn_bf16_32x3x224x224.kir"
timeout 150 python3 bench/ab.py --a old=$B/kiln-old --b new=$B/kiln --rounds 3 --out /tmp/ab_t $G > $OUT/ab.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep -v "^ab.py: run" $OUT/ab.txt
tar czf $OUT/ab.tgz -C /tmp ab_t 2>/dev/null
timeout 120 python3 bench/zoo.py --kiln $B/kiln --no-tune --only batch_norm_train_f16,nhw_mean_nchw_bf16 --json $OUT/zoo.json > $OUT/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^zoo.py\|^$\|warn\|Online\|split the\|Cut an\|important\|softmax.$\|UserWarning" $OUT/zoo.txt | tail -12
echo "done at $(( $(date +%s) - start )) s"
