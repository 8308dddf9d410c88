#!/usr/bin/env bash
# Session 31 run 9: batch norm as one row kernel (canonicalize moves the normalisation into the
# statistics' transposed space; the result is stored through the inverse transpose).
# scripts/gpu-check (tests: every candidate of three batch norms against the interpreter among
# them), then the zoo's norm class with --check (kiln against the interpreter, torch eager and
# torch.compile side by side, L2 flushed), the new 7 x 7 batch norm included.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s)
mkdir -p $OUT/r
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 420 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "passed|failed" $OUT/r/gpu_check.txt | grep -v " 0 failed" | tail -5; grep -E "cases" $OUT/r/gpu_check.txt | tail -2
grep -h "batch_norm" $OUT/r/gpu-check/*/*.txt 2>/dev/null | head -3
tar czf $OUT/r/gc.tgz -C $OUT/r gpu-check 2>/dev/null && rm -rf $OUT/r/gpu-check
left=$(( 590 - ($(date +%s) - start) ))
timeout $left python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --check --only batch_norm_train_f16,batch_norm_train_rn50_bf16,batch_norm_train_rn50_last_bf16,group_norm_sd_f16,layer_norm_channels_first_f32 --json $OUT/r/zoo_norm.json > $OUT/r/zoo_norm.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -E "^workload|^batch|^group|^layer|^zoo:|problem" $OUT/r/zoo_norm.txt | cut -c1-230
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
