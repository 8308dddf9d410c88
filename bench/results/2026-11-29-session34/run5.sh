#!/usr/bin/env bash
# Session 34 run 5: the same build; the zoo's softmax class with --check (softmax_classes_nchw_f16
# now takes the shared-memory column cache by default), and kiln tune on it.
tar xzf .carry/gbz/gb.tgz -C .carry
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); mkdir -p $OUT/r
timeout 60 .carry/gb/bin/kiln tune .carry/zoo/softmax_classes_nchw_f16.json --reps 15 > $OUT/r/tune_softmax_classes_nchw_f16.txt 2>&1; tr '|' '\n' < $OUT/r/tune_softmax_classes_nchw_f16.txt | grep -E "smem|default"
timeout 400 python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --check --classes softmax --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -E "^workload|_f32 |_bf16 |_f16 |^zoo:|problem|region" $OUT/r/zoo.txt | grep -v "^zoo.py" | cut -c1-200
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
