#!/usr/bin/env bash
# Session 31 run 6: scripts/gpu-check (tests) on 0299079 (a shared row cache never leaves a block
# alone on its SM), then the layer_norm / softmax row-count sweep of run 4 on the new defaults.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
R=bench/results/2026-11-29-session31
start=$(date +%s)
mkdir -p $OUT/r
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 300 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "cases|failed" $OUT/r/gpu_check.txt | tail -5
for g in $R/rows/*.json; do
  b=$(basename $g .json)
  timeout 60 .carry/gb/bin/kiln bench $g --no-tune --flush-l2 --reps 20 --device h200 > $OUT/r/bench_$b.txt 2>&1
  echo "$b rc=$?: $(grep -oE 'graph: [0-9.]+ us measured, [0-9.]+ us predicted' $OUT/r/bench_$b.txt) | $(grep -oE 'same-size copy: [0-9.]+ us' $OUT/r/bench_$b.txt) | $(grep -oE 'copy / time = [0-9.]+' $OUT/r/bench_$b.txt)"
done
tar czf $OUT/r/gc.tgz -C $OUT/r gpu-check 2>/dev/null && rm -rf $OUT/r/gpu-check
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
