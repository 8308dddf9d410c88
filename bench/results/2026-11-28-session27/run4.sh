#!/usr/bin/env bash
# Session 27 run 4: transformer_block end to end, then bench/attention.py beside SDPA (kiln tuned by kiln bench).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
start=$(date +%s)
timeout 200 python3 bench/models.py --models transformer_block --modes eager,default,reduce-overhead --json $OUT/models_tb.json > $OUT/models_tb.txt 2> $OUT/models_tb.err
echo "tb rc=$? at $(( $(date +%s) - start )) s"; grep -v "torch.onnx" $OUT/models_tb.txt; tail -3 $OUT/models_tb.err
timeout 330 python3 bench/attention.py --kiln .carry/gb/bin/kiln --reps 10 --json $OUT/attention.json \
  --only S4096_D64_causal,S4096_D64,gqa8_S4096_D128_causal,gqa8_S4096_D128,gqa4_S2000_D96_causal,S1024_D128_causal \
  > $OUT/attention.txt 2>&1; echo "attention rc=$? at $(( $(date +%s) - start )) s"; cat $OUT/attention.txt
