#!/usr/bin/env bash
# Session 30 run 1: scripts/gpu-check (tests) on the build with ExpShifted and the few-rows
# cache; then A/B of the old (session 29) and new kiln binaries, kiln bench --no-tune, on the
# exponential-heavy zoo workloads (L2 flushed) and on norms alone over few rows (CUDA graph).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD
export PYTHONPATH=$PWD/python:$PWD/bench KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so KILN_CACHE_DIR=/tmp/kc
R=bench/results/2026-11-29-session30
start=$(date +%s)
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
mkdir -p $OUT/r
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 330 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "passed|failed|FAILED|cases" $OUT/r/gpu_check.txt | tail -8
for round in 1 2; do
  for w in softmax_vocab151936_bf16 softmax_vocab50257_f16 softmax_vocab32000_bf16 softmax_12x32000_f32 softmax_4x1M_f32 softmax_scores_vit197_f16 softmax_scores_1024_bf16 softmax_classes_nchw_f16 softmax_axis1_16MiB_f32 log_softmax_vocab128256_bf16 xent_gpt2_vocab_bf16; do
    for b in old new; do
      bin=.carry/gb/bin/kiln; [ $b = old ] && bin=.carry/kold/kiln
      $bin bench .carry/zoo/$w.json --no-tune --flush-l2 --reps 100 --device h200 > $OUT/r/ab_${w}_${b}_$round.txt 2>&1
      echo "$round $w $b $(grep -E '^ *graph' $OUT/r/ab_${w}_${b}_$round.txt | head -1)"
    done
  done
done
echo "A/B done at $(( $(date +%s) - start )) s"
for g in rms_1x1024 rms_16x1024 rms_64x1024 rms_512x1024 layer_1x1024 layer_16x1024 layer_64x1024 layer_512x1024 rms_1x4096 rms_16x4096 layer_1x4096 layer_16x4096; do
  for b in old new; do
    bin=.carry/gb/bin/kiln; [ $b = old ] && bin=.carry/kold/kiln
    $bin bench $R/$g.json --no-tune --cuda-graph --reps 200 --device h200 > $OUT/r/norm_${g}_$b.txt 2>&1
    echo "$g $b $(grep -E 'cuda graph' $OUT/r/norm_${g}_$b.txt | head -1)"
  done
done
echo "norms done at $(( $(date +%s) - start )) s"
timeout 120 python3 bench/results/2026-11-29-session29/run9.py > $OUT/r/run9_again.txt 2>&1; cat $OUT/r/run9_again.txt | tail -6
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
