#!/usr/bin/env bash
# Session 29 run 1: bench/models.py on a model no kernel was tuned on: the BERT encoder layer
# (post-LN, key-padding mask from a bool input), fixture and user sizes, bf16 and f32.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s)
mkdir -p $OUT/r
timeout 520 python3 bench/models.py --models bert --sizes user,fixture --dtypes bf16,f32 --modes eager,default,reduce-overhead --workdir $OUT/r/exports --json $OUT/r/models_bert.json > $OUT/r/models_bert.txt 2>&1
echo "models rc=$? at $(( $(date +%s) - start )) s"; grep -v "^\[" $OUT/r/models_bert.txt | tail -30
rm -rf $OUT/r/exports/*.onnx
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
