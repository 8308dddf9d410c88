#!/usr/bin/env bash
# Session 25 run 7: the GPU test binaries not run in runs 3-4, on the committed build.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b25t
mkdir -p $OUT/r
for t in runtime_linear_gpu_test runtime_cuda_graph_gpu_test runtime_matmul_gpu_test runtime_launch_gpu_test frontends_onnx_fixture_gpu_test capi_gpu; do
  timeout 60 $B/$t > $OUT/r/$t.txt 2>&1; echo "$t rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]" $OUT/r/$t.txt | head -4
done
timeout 150 $B/codegen_region_gpu_test --gtest_filter='AttentionGpuTest.*:RegionGpuTest.ColumnKernels' > $OUT/r/attn_col.txt 2>&1; echo "attention+columns rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]|OK \]" $OUT/r/attn_col.txt | head -20
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
