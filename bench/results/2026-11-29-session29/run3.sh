#!/usr/bin/env bash
# Session 29 run 3: bench/norm_linear.py, LayerNorm -> Linear (issue 16): kiln as planned, the
# fold forced (KILN_FORCE_FUSE=norm-matmul), kiln unfused, torch eager and torch.compile.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s)
mkdir -p $OUT/r
timeout 540 python3 bench/norm_linear.py --only ${NORMS:-layer} --reps 50 --json $OUT/r/norm_linear_${NORMS:-layer}.json > $OUT/r/norm_linear_${NORMS:-layer}.txt 2>&1
echo "norm_linear rc=$? at $(( $(date +%s) - start )) s"; grep -v Warning $OUT/r/norm_linear_${NORMS:-layer}.txt | tail -14
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
