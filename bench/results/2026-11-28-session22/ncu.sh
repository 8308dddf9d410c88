#!/usr/bin/env bash
# Session 22 run 6: ncu on the rows the zoo leaves below torch.compile or the floor (for a successor).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b22
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
mkdir -p $OUT/ncu
for g in layer_norm_gpt2_768_bf16 layer_norm_odd1000_f16 col_sum_odd50257_bf16 softmax_vocab151936_bf16 xent_gpt2_vocab_bf16 rms_norm_8192_bf16; do
  timeout 60 ncu --kernel-name regex:kiln_ --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    $B/kiln-l bench /tmp/zoo/$g.json --no-tune --reps 5 > $OUT/ncu/$g.txt 2>&1
  echo "$g rc=$? at $(( $(date +%s) - start )) s"
  grep -E "DRAM Throughput|Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit Reg|Waves Per SM|Stall Long|L1/TEX Hit|Mem Busy|Max Bandwidth" $OUT/ncu/$g.txt | head -14
done
tar czf $OUT/ncu.tgz -C $OUT ncu && rm -rf $OUT/ncu
echo "done at $(( $(date +%s) - start )) s"
