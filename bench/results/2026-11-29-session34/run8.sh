#!/usr/bin/env bash
# Session 34 run 8: the final build (candidates beside a shared-memory column default now include
# the model's choice without shared memory, the default it replaced): kiln tune on four shapes
# whose default is the shared cache, and the zoo row of softmax_classes_nchw_f16 with --check.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
export TORCHINDUCTOR_COMPILE_THREADS=16
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); R=$OUT/r; mkdir -p $R
for g in .carry/sw/log_softmax_2x150x128x128_bf16.json .carry/sw/log_softmax_2x150x128x128_f16.json .carry/sw/softmax_1x81x50000_bf16.json .carry/zoo/softmax_classes_nchw_f16.json; do
  w=$(basename $g .json)
  timeout 60 .carry/k/bin/kiln tune $g --reps 15 > $R/tune_$w.txt 2>&1
  echo "== $w rc=$?"; tr '|' '\n' < $R/tune_$w.txt | grep -E "us" | grep -E "default|<-|smem$|smem \(|tile=0x8 [0-9]|chunk=0 tile=0x32 [0-9]" | cut -c1-110
done
timeout 120 python3 bench/zoo.py --kiln .carry/k/bin/kiln --no-tune --check --only softmax_classes_nchw_f16 --json $R/zoo.json > $R/zoo.txt 2>&1
echo "zoo rc=$?"; grep -E "^softmax_classes|^zoo:" $R/zoo.txt | cut -c1-220
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
echo "done at $(( $(date +%s) - start )) s"
