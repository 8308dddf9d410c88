#!/usr/bin/env bash
# Session 23 run 6: the committed kiln (49b5858): GPU tests, node tests, checks, A/B of group norm
# as one kernel (kiln) against two (kiln-r5), the norm rows of the zoo against torch.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s); B=.carry/b23; S=.carry/s23; R=/tmp/r6; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
timeout 150 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.RowsReadThroughATranspose:RegionGpuTest.SmallExamples:RegionGpuTest.RowKernelShapeSweep:RegionGpuTest.ColumnKernels' > $R/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]" $R/region_test.txt | head
timeout 40 $B/runtime_executable_gpu_test > $R/executable_test.txt 2>&1; echo "executable rc=$?"; tail -1 $R/executable_test.txt
KILN_ONNX_NODE_TESTS=$S/node timeout 60 $B/frontends_onnx_node_gpu_test > $R/node_gpu.txt 2>&1; echo "node_gpu rc=$?"; grep -E "tests:" $R/node_gpu.txt
timeout 45 $B/kiln_graph_diff --mode gpu --seeds 70:100 > $R/graph_diff.txt 2>&1; echo "graph_diff rc=$?"; tail -1 $R/graph_diff.txt
for g in $S/gn_*.kir /tmp/zoo/group_norm_sd_f16.json tests/frontends/onnx_testdata/values/channel_norms/model.onnx; do
  timeout 60 $B/kiln run $g --check --random 5 > $R/check_$(basename $g).txt 2>&1; echo "check $(basename $g) rc=$?"
done
timeout 60 python3 bench/ab.py --a two=$B/kiln-r5 --b one=$B/kiln --rounds 3 --out /tmp/ab_gn /tmp/zoo/group_norm_sd_f16.json $S/gn_bf16_4x64x9_g8.kir > $R/ab_gn.txt 2>&1
echo "ab rc=$?"; grep -v "^ab.py: run" $R/ab_gn.txt
timeout 150 python3 bench/zoo.py --kiln $B/kiln --no-tune --only group_norm_sd_f16,batch_norm_train_rn50_bf16,batch_norm_train_f16,layer_norm_channels_first_f32 --json $R/zoo.json > $R/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^zoo.py\|^$\|warn\|Online\|split the\|Cut an\|important\|softmax.$\|UserWarning" $R/zoo.txt | tail -10
tar czf $OUT/run6.tgz -C /tmp r6 ab_gn
echo "done at $(( $(date +%s) - start )) s"
