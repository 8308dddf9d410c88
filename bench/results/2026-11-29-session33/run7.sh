#!/usr/bin/env bash
# Session 33 run 7: ClusterMerge reads each word of a cluster's slots once (into the block's
# shared memory) instead of once per thread, built with column clusters of up to 8 blocks
# allowed again to see whether that was their cost. scripts/gpu-check (tests: every candidate,
# the cluster ones included, against the interpreter); kiln tune on run 4's column softmaxes and
# on three row workloads whose default is a cluster.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s); mkdir -p $OUT/r
for f in .carry/cc/*.json .carry/zoo/softmax_vocab151936_bf16.json .carry/zoo/layer_norm_16x12288_f32.json .carry/zoo/softmax_12x32000_f32.json; do w=$(basename $f .json)
  timeout 60 .carry/gb/bin/kiln tune $f --reps 10 > $OUT/r/tune_$w.txt 2>&1; echo "== $w rc=$?"; tr '|' '\n' < $OUT/r/tune_$w.txt | grep -E "cluster|default|<-" | head -12
done
echo "tune done at $(( $(date +%s) - start )) s"
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 330 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "passed|failed" $OUT/r/gpu_check.txt | grep -v " 0 failed" | tail -5; grep -E "cases" $OUT/r/gpu_check.txt | tail -2
tar czf $OUT/r/gc.tgz -C $OUT/r gpu-check 2>/dev/null && rm -rf $OUT/r/gpu-check
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
