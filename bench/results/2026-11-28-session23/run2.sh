#!/usr/bin/env bash
# Session 23 run 2: 32-bit run indices (kiln-32) against 64-bit (kiln) and the old two-kernel form; tune tables.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b23; S=.carry/s23
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
G="/tmp/zoo/batch_norm_train_f16.json /tmp/zoo/nhw_mean_nchw_bf16.json $S/bn_bf16_32x256x56x56.kir $S/bn_f32_3x5x33x33.kir $S/bn_bf16_32x3x224x224.kir"
timeout 150 python3 bench/ab.py --a new=$B/kiln --b n32=$B/kiln-32 --rounds 3 --out /tmp/ab_32 $G > $OUT/ab32.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep -v "^ab.py: run" $OUT/ab32.txt
for g in /tmp/zoo/nhw_mean_nchw_bf16.json /tmp/zoo/batch_norm_train_f16.json /tmp/zoo/hw_mean_nchw_bf16.json; do
  n=$(basename $g .json)
  KILN_CACHE_DIR=/tmp/kc timeout 90 $B/kiln-32 tune $g --reps 30 > $OUT/tune_$n.txt 2>&1; echo "tune $n rc=$?"; grep -v "^$" $OUT/tune_$n.txt | head -40
done
tar czf $OUT/ab.tgz -C /tmp ab_32 2>/dev/null
echo "done at $(( $(date +%s) - start )) s"
