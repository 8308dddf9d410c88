#!/usr/bin/env bash
# Session 21 run 9: compute-sanitizer memcheck and racecheck over the kernels the row-fit change picks.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64
start=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
CS=/usr/local/cuda/bin/compute-sanitizer
for g in /tmp/zoo/softmax_axis1_16MiB_f32.json .carry/s21/softmax_300x50257_f16.json /tmp/zoo/layer_norm_16x12288_f32.json /tmp/zoo/softmax_12x32000_f32.json /tmp/zoo/row_sum_1x1M_f32.json; do
  n=$(basename $g .json)
  for tool in memcheck racecheck; do
    [[ $(( $(date +%s) - start )) -gt ${BUDGET:-130} ]] && { echo "budget out before $n $tool"; continue; }
    timeout 60 $CS --tool $tool --error-exitcode 9 .carry/b21/kiln run $g --check > $OUT/${n}_$tool.txt 2>&1
    echo "$n $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|mismatch|within' $OUT/${n}_$tool.txt | head -2 | tr '\n' ' ')"
  done
done
echo "done at $(( $(date +%s) - start )) s"
