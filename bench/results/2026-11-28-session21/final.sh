#!/usr/bin/env bash
# Session 21 run 7: A/B of the final build on the rows it changes, those rows against torch, random graphs.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
B=.carry/b21
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
ROWS="softmax_axis1_16MiB_f32 softmax_vocab50257_f16 layer_norm_16x12288_f32 softmax_12x32000_f32 row_sum_1x1M_f32 softmax_classes_nchw_f16 layer_norm_channels_first_f32 softmax_4x1M_f32 layer_norm_chw_256k_f32 batch_norm_train_f16"
G=""; for n in $ROWS; do G="$G /tmp/zoo/$n.json"; done
timeout 200 python3 bench/ab.py --a base=$B/kiln-base --b new=$B/kiln --rounds 3 --out /tmp/ab $G > $OUT/ab.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep -v "^ab.py: run" $OUT/ab.txt | tail -12
timeout 200 python3 bench/zoo.py --kiln $B/kiln --no-tune --only $(echo $ROWS | tr ' ' ',') --json $OUT/zoo_changed.json > $OUT/zoo_changed.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^zoo.py: \[" $OUT/zoo_changed.txt | tail -18
timeout 120 $B/kiln_graph_diff --mode gpu --seeds 5000:100000 --seconds 90 > $OUT/graph_diff.txt 2>&1; echo "graph_diff rc=$?"; tail -4 $OUT/graph_diff.txt
echo "done at $(( $(date +%s) - start )) s"
