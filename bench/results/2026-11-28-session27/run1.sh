#!/usr/bin/env bash
# Session 27 run 1: the GPU tests on the TMA attention kernel, then bench/attention.py beside SDPA.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 330 scripts/gpu-check --bundle .carry/gbx > $OUT/gpu_check.txt 2>&1; echo "gpu-check rc=$?"
tail -30 $OUT/gpu_check.txt
timeout 220 python3 bench/attention.py --kiln .carry/gb/bin/kiln --reps 20 --json $OUT/attention.json \
  --only S4096_D128,S4096_D128_causal,S1024_D128_causal,S16384_D128_causal,S4096_D64,S4096_D64_causal,decode_T8192_gqa8,gqa8_S4096_D128,gqa8_S4096_D128_causal,gqa4_S2000_D96_causal \
  > $OUT/attention.txt 2>&1; echo "attention rc=$?"; cat $OUT/attention.txt
