#!/usr/bin/env bash
# Session 30 run 5: scripts/gpu-check parts aot and check on the final build: artifacts compiled
# on the default (now auto) device spec, run from the artifact with --check (the reference then
# resolves the artifact's spec: an auto spec's name is the GPU's), and the full-size examples.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s)
mkdir -p $OUT/r
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=aot,check KILN_GPU_CHECK_JOBS=8 timeout 520 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; tail -25 $OUT/r/gpu_check.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
