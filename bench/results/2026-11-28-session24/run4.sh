#!/usr/bin/env bash
# Session 24 run 4: ragged columns: every candidate timed (kiln tune) for 2-byte types; A/B of f32 ragged shapes.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b24; A=.carry/b23; G=.carry/s24/g
nvidia-smi --query-gpu=name --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
mkdir -p $OUT/r
for g in /tmp/zoo/col_sum_odd50257_bf16.json $G/midmean_8x2048x4095_f16.kir $G/colnormw_16x1024x1001_bf16.kir $G/colsum_4096x32001_bf16.kir; do
  timeout 60 $B/kiln tune $g --reps 30 > $OUT/r/tune_$(basename $g).txt 2>&1; grep "tuned region" $OUT/r/tune_$(basename $g).txt | sed 's/ | /\n     /g'
done
echo "tune at $(( $(date +%s) - start )) s"
for g in $G/*f32.kir; do timeout 30 $B/kiln run $g --check --random 1 > $OUT/r/check_$(basename $g .kir).txt 2>&1; echo "check $(basename $g) rc=$?"; done
timeout 200 python3 bench/ab.py --a old=$A/kiln --b new=$B/kiln --rounds 3 --reps 30 --out $OUT/r/ab $G/*f32.kir /tmp/zoo/softmax_classes_nchw_f16.json > $OUT/r/ab.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep "new/old" $OUT/r/ab.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
