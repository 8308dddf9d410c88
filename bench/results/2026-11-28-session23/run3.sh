#!/usr/bin/env bash
# Session 23 run 3: a reduce-only row's split priced down to none (kiln-s) against kiln-32.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b23; S=.carry/s23
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
G="/tmp/zoo/batch_norm_train_f16.json /tmp/zoo/nhw_mean_nchw_bf16.json /tmp/zoo/amax_all_bf16.json /tmp/zoo/row_sum_1x1M_f32.json $S/bn_bf16_32x256x56x56.kir $S/bn_f16_16x64x56x56.kir $S/bn_bf16_32x3x224x224.kir"
timeout 200 python3 bench/ab.py --a n32=$B/kiln-32 --b s=$B/kiln-s --rounds 3 --out /tmp/ab_s $G > $OUT/ab_s.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep -v "^ab.py: run" $OUT/ab_s.txt
tar czf $OUT/ab.tgz -C /tmp ab_s 2>/dev/null
echo "done at $(( $(date +%s) - start )) s"
