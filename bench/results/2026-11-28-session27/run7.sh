#!/usr/bin/env bash
# Session 27 run 7: the remaining user-size rows (two bf16 models, every f32 one), kiln untuned, beside torch.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
start=$(date +%s)
timeout 150 python3 bench/models.py --models gpt2_manual,gpt2_attn_dropout --sizes user --dtypes bf16 \
  --modes eager,default,reduce-overhead --json $OUT/models_user_bf16b.json > $OUT/models_user_bf16b.txt 2> $OUT/models_user_bf16b.err
echo "rc=$? at $(( $(date +%s) - start )) s"; grep -v "torch.onnx" $OUT/models_user_bf16b.txt
timeout 300 python3 bench/models.py --models gpt2_sdpa,gpt2_manual,gpt2_tanh,gpt2_dropout,gpt2_attn_dropout,llama,ce_head --sizes user --dtypes f32 \
  --modes eager,default,reduce-overhead --json $OUT/models_user_f32.json > $OUT/models_user_f32.txt 2> $OUT/models_user_f32.err
echo "rc=$? at $(( $(date +%s) - start )) s"; grep -v "torch.onnx" $OUT/models_user_f32.txt; tail -2 $OUT/models_user_f32.err
