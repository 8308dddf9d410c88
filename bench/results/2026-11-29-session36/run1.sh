#!/usr/bin/env bash
# Session 36 run 1: one price for a column launch (ColumnEstimate: the fit ranks its shapes by
# the region's own price, base included). scripts/gpu-check, tests part (every candidate of the
# GPU tests' regions against the interpreter); kiln tune (every candidate timed, L2 flushed,
# now with ptxas's registers) on the twelve graphs whose default moved (.carry/r6).
tar xzf .carry/gbz/gb.tgz -C .carry
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s); mkdir -p $OUT/r
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/r/gpu.txt 2>&1
for g in .carry/r6/*.json; do w=$(basename $g .json); timeout 40 .carry/gb/bin/kiln tune $g --reps 15 > $OUT/r/tune_$w.txt 2>&1; echo "== $w $(grep -o '[0-9.]* us (pred [0-9.]*) \[[^]]*\] (default)' $OUT/r/tune_$w.txt)"; done
echo "tune done at $(( $(date +%s) - start )) s"
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 330 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "passed|failed" $OUT/r/gpu_check.txt | grep -v " 0 failed" | tail -5; grep -E "cases" $OUT/r/gpu_check.txt | tail -2
tar czf $OUT/r/gc.tgz -C $OUT/r gpu-check 2>/dev/null && rm -rf $OUT/r/gpu-check
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
