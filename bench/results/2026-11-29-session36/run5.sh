#!/usr/bin/env bash
# Session 36 run 5: the whole zoo (64 workloads, the MoE router softmax new) on the final build,
# kiln defaults (--no-tune), torch eager and torch.compile in the same process, L2 flushed.
tar xzf .carry/gbz/gb.tgz -C .carry
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); mkdir -p $OUT/r
timeout 400 python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -E "^zoo:|above" $OUT/r/zoo.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
