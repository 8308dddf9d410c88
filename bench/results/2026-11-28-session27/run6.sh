#!/usr/bin/env bash
# Session 27 run 6: the fixture models at a user's size (bf16), kiln untuned, beside torch.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
start=$(date +%s)
timeout 480 python3 bench/models.py --models gpt2_sdpa,gpt2_tanh,gpt2_dropout,llama,ce_head --sizes user --dtypes bf16 \
  --modes eager,default,reduce-overhead --json $OUT/models_user.json > $OUT/models_user.txt 2> $OUT/models_user.err
echo "rc=$? at $(( $(date +%s) - start )) s"; grep -v "torch.onnx" $OUT/models_user.txt; tail -3 $OUT/models_user.err
