#!/usr/bin/env bash
# Session 31 run 11: the zoo's softmax and norm classes on the final build (L2 flushed, torch in
# the same process), to confirm that nothing else moved with the batch norm and fit changes.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
start=$(date +%s)
mkdir -p $OUT/r
timeout 240 python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --classes softmax,norm --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -E "^[a-z_0-9]+ +(softmax|norm) |^zoo:|above 2" $OUT/r/zoo.txt | cut -c1-200
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
