#!/usr/bin/env bash
# Session 32 run 8: the ragged column priced at ptxas's registers (64, not 80): the sum over
# [512, 50257] bf16 with its new default, checked against the interpreter beside torch, and
# every candidate timed (kiln tune), twice.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
mkdir -p $OUT/r
timeout 120 python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --check --only col_sum_odd50257_bf16,col_sum_bias_grad_bf16 --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
grep -E "^workload|_f32 |_bf16 |_f16 |^zoo:|problem|region" $OUT/r/zoo.txt | grep -v "^zoo.py" | cut -c1-200
for i in 1 2; do timeout 60 .carry/gb/bin/kiln tune .carry/zoo/col_sum_odd50257_bf16.json --reps 20 > $OUT/r/tune$i.txt 2>&1; tr '|' '\n' < $OUT/r/tune$i.txt | grep -E "us" | head -20; done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
