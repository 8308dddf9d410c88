#!/usr/bin/env bash
# Session 29 run 2: scripts/gpu-check (tests) on the working tree: the layer_norm fold
# (LinearGpuTest.LayerNormFoldedIntoItsLinear), the attention template's folded tile test, and
# every other GPU test.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD
start=$(date +%s)
mkdir -p $OUT/r
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 420 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "passed|failed|FAILED|cases" $OUT/r/gpu_check.txt | tail -14
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
