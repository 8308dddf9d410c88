#!/usr/bin/env bash
# Session 36 run 3: the build with streamed column defaults bounded to their priced residency.
# scripts/gpu-check, tests part; kiln tune over the 29 column graphs of runs 1 and 2
# (.carry/r7); the zoo's column, middle and multi-axis classes with --check.
tar xzf .carry/gbz/gb.tgz -C .carry
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s); mkdir -p $OUT/r
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/r/gpu.txt 2>&1
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 300 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "cases" $OUT/r/gpu_check.txt | tail -2
tar czf $OUT/r/gpu-check.tgz -C $OUT/r gpu-check 2>/dev/null && rm -rf $OUT/r/gpu-check
for g in .carry/r7/*.json; do
  w=$(basename $g .json)
  timeout 40 .carry/gb/bin/kiln tune $g --reps 15 > $OUT/r/tune_$w.txt 2>&1
  echo "== $w: $(grep -o '[0-9.]* us (pred [0-9.]*) \[[^]]*\] (default)' $OUT/r/tune_$w.txt)"
done
echo "tune done at $(( $(date +%s) - start )) s"
left=$(( 590 - ($(date +%s) - start) ))
timeout $left python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --check --classes column,middle,multi-axis --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -E "^workload|_f32 |_bf16 |_f16 |^zoo:|problem|region" $OUT/r/zoo.txt | grep -v "^zoo.py" | cut -c1-200
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
