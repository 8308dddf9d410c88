#!/usr/bin/env bash
# Session 36 run 4: short rows owned by one or two threads. scripts/gpu-check, tests part (with
# the new RegionGpuTest.ManyShortRowsOfOneOrTwoLanes); kiln tune over seven short-row graphs
# (.carry/sr: the zoo's 1M x 16 sum, MoE-router softmaxes, odd widths); the zoo's row class and
# its short-row softmaxes with --check.
tar xzf .carry/gbz/gb.tgz -C .carry
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s); mkdir -p $OUT/r
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/r/gpu.txt 2>&1
for g in .carry/sr/*.json; do
  w=$(basename $g .json)
  timeout 30 .carry/gb/bin/kiln tune $g --reps 15 > $OUT/r/tune_$w.txt 2>&1
  echo "== $w: $(grep -o '[0-9.]* us (pred [0-9.]*) \[[^]]*\] (default)' $OUT/r/tune_$w.txt)"
done
echo "tune done at $(( $(date +%s) - start )) s"
timeout 150 python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --check --only row_sum_1Mx16_f32,row_sum_1Mx1_f32,row_mean_1024_f16,row_min_1001_f32,softmax_router_65536x8_f32,softmax_scores_vit197_f16,xent_gpt2_vocab_bf16 --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -E "^workload|_f32 |_bf16 |_f16 |^zoo:|problem|region" $OUT/r/zoo.txt | grep -v "^zoo.py" | cut -c1-200
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout $(( 580 - ($(date +%s) - start) )) scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "cases|FAIL|ManyShort" $OUT/r/gpu_check.txt | tail -5
tar czf $OUT/r/gpu-check.tgz -C $OUT/r gpu-check 2>/dev/null && rm -rf $OUT/r/gpu-check
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
