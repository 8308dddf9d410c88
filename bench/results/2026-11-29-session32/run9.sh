#!/usr/bin/env bash
# Session 32 run 9: whole models on the final build (streamed rows at four in flight; the row
# kernels' new block rule): the cross-entropy head and the GPT-2 block, bf16, at a user's size,
# kiln against torch eager and torch.compile (default, reduce-overhead) in the same process.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); mkdir -p $OUT/r
timeout 270 python3 bench/models.py --models ce_head,gpt2_sdpa --sizes user --dtypes bf16 --modes eager,default,reduce-overhead --workdir /tmp/mx --json $OUT/r/models_bf16.json > $OUT/r/models_bf16.txt 2>&1
echo "models rc=$? at $(( $(date +%s) - start )) s"; grep -v "^\[" $OUT/r/models_bf16.txt | grep -v Warn | tail -10
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
