#!/usr/bin/env bash
# Session 29 run 7: scripts/gpu-check (tests) on the final tree; then kiln bench per step of
# the norm -> Linear graphs on a 1024 x 1024 weight (where kiln's unfused pair ran 0.90-0.93x
# torch.compile's in runs 4-5).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD
R=bench/results/2026-11-29-session29
start=$(date +%s)
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
mkdir -p $OUT/r
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 420 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "passed|failed|FAILED|cases" $OUT/r/gpu_check.txt | tail -14
for g in rms_1 rms_16 layer_1 layer_16; do
  .carry/gb/bin/kiln bench $R/${g}x1024x1024.json --no-tune --cuda-graph --reps 200 --device h200 > $OUT/r/bench_$g.txt 2>&1
  grep -E "^  [0-9]|graph:|cuda graph:" $OUT/r/bench_$g.txt
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
