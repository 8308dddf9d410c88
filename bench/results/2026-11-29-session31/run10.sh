#!/usr/bin/env bash
# Session 31 run 10: issue 13's f32 rows at a user's size (not rerun since session 28): three of
# the fixture modules against torch eager, torch.compile default and reduce-overhead.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s)
mkdir -p $OUT/r
timeout 280 python3 bench/models.py --models gpt2_sdpa,llama,ce_head --sizes user --dtypes f32 --modes eager,default,reduce-overhead --workdir /tmp/mx --json $OUT/r/models_f32.json > $OUT/r/models_f32.txt 2>&1
echo "models rc=$? at $(( $(date +%s) - start )) s"; grep -v "^\[" $OUT/r/models_f32.txt | grep -v Warn | tail -8
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
