#!/usr/bin/env bash
# Session 25 run 1: main at 7d21e22 on the H200: the full zoo against torch, the tuner's table and ncu on the long split rows.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s); B=.carry/b25
nvidia-smi --query-gpu=name --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null; Z=/tmp/zoo
mkdir -p $OUT/r
for w in layer_norm_chw_256k_f32 layer_norm_4x1M_f32 softmax_4x1M_f32 softmax_vocab151936_bf16; do
  timeout 40 $B/kiln tune $Z/$w.json --reps 20 > $OUT/r/tune_$w.txt 2>&1; echo "tune $w rc=$?"; tail -4 $OUT/r/tune_$w.txt
done
echo "at $(( $(date +%s) - start )) s"
for w in layer_norm_chw_256k_f32 softmax_4x1M_f32; do
  timeout 60 ncu --kernel-name regex:kiln_ --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis $B/kiln bench $Z/$w.json --no-tune --reps 5 > $OUT/r/ncu_$w.txt 2>&1; echo "ncu $w rc=$?"
done
echo "at $(( $(date +%s) - start )) s"
timeout 330 python3 bench/zoo.py --kiln $B/kiln --no-tune --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^zoo.py\|^$\|warn\|Online\|split the\|Cut an\|important\|softmax.$\|UserWarning" $OUT/r/zoo.txt | tail -70
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
