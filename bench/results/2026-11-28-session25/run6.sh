#!/usr/bin/env bash
# Session 25 run 6: ncu on the vocabulary rows with the committed build (dbb87f4).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b25c
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null; Z=/tmp/zoo
mkdir -p $OUT/r
for w in softmax_vocab151936_bf16 softmax_vocab32000_bf16 xent_gpt2_vocab_bf16; do
  timeout 60 ncu --kernel-name regex:kiln_ --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats $B/kiln bench $Z/$w.json --no-tune --reps 5 > $OUT/r/ncu_$w.txt 2>&1; echo "ncu $w rc=$?"
  grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc Active|Executed Instructions  " $OUT/r/ncu_$w.txt
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
