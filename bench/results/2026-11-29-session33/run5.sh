#!/usr/bin/env bash
# Session 33 run 5: the final build (column tiles priced for their lone phases; column clusters
# of at most 4 blocks). scripts/gpu-check (tests: every candidate of the GPU tests' regions
# against the interpreter), then the zoo's changed workloads with --check, and kiln tune on the
# new zoo workload.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s); mkdir -p $OUT/r
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 400 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "passed|failed" $OUT/r/gpu_check.txt | grep -v " 0 failed" | tail -5; grep -E "cases" $OUT/r/gpu_check.txt | tail -2
tar czf $OUT/r/gc.tgz -C $OUT/r gpu-check 2>/dev/null && rm -rf $OUT/r/gpu-check
timeout 60 .carry/gb/bin/kiln tune .carry/zoo/softmax_axis1_frames_f32.json --reps 10 > $OUT/r/tune_softmax_axis1_frames_f32.txt 2>&1; tr '|' '\n' < $OUT/r/tune_softmax_axis1_frames_f32.txt | grep us | head -30
left=$(( 590 - ($(date +%s) - start) ))
timeout $left python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --check --only softmax_axis1_16MiB_f32,softmax_axis1_frames_f32,softmax_classes_nchw_f16,mid_mean_frames_f32 --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -E "^workload|_f32 |_bf16 |_f16 |^zoo:|problem|region" $OUT/r/zoo.txt | grep -v "^zoo.py" | cut -c1-200
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
