#!/usr/bin/env bash
# Session 29 run 10: the zoo (61 workloads, heuristic launches, torch eager and torch.compile
# side by side) on the final build: no default launch changed this session.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
start=$(date +%s)
mkdir -p $OUT/r
timeout 500 python3 bench/zoo.py --kiln .carry/kb/kiln --no-tune --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; tail -1 $OUT/r/zoo.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
