#!/usr/bin/env bash
# Session 30 run 3: the cost model's default device is now "auto" (this GPU's query), and the
# auto spec has the TMA attention rate. scripts/gpu-check (tests); bench/norm_linear.py on the
# 1024 x 1024 weight (where the h100 default folded rms_norm at 8 and 16 rows); bench/models.py
# transformer_block, llama_gqa and bert (bf16, a user's size) priced on the auto spec.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so
export TORCHINDUCTOR_COMPILE_THREADS=16
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s)
mkdir -p $OUT/r
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 280 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "cases|failed" $OUT/r/gpu_check.txt | grep -v " 0 failed" | tail -5
timeout 60 python3 bench/norm_linear.py --only rms,layer --m 1,8,16 --k 1024 --n 1024 --reps 50 --json $OUT/r/nl_1024.json > $OUT/r/nl_1024.txt 2>&1
echo "norm_linear 1024 rc=$? at $(( $(date +%s) - start )) s"; grep -v Warning $OUT/r/nl_1024.txt | tail -7
left=$(( 575 - ($(date +%s) - start) ))
timeout $left python3 bench/models.py --models transformer_block,llama_gqa,bert --sizes user,fixture --dtypes bf16 --modes eager,default,reduce-overhead --workdir /tmp/mx --json $OUT/r/models.json > $OUT/r/models.txt 2>&1
echo "models rc=$? at $(( $(date +%s) - start )) s"; grep -v "^\[" $OUT/r/models.txt | grep -v Warn | tail -9
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
