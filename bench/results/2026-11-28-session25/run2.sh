#!/usr/bin/env bash
# Session 25 run 2: ncu detail on the vocab rows (split clusters in shared memory, register rows).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b25
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null; Z=/tmp/zoo
mkdir -p $OUT/r
for w in softmax_vocab151936_bf16 log_softmax_vocab128256_bf16 xent_gpt2_vocab_bf16 softmax_vocab32000_bf16 softmax_vocab50257_f16; do
  timeout 100 ncu --kernel-name regex:kiln_ --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section SourceCounters --section ComputeWorkloadAnalysis $B/kiln bench $Z/$w.json --no-tune --reps 5 > $OUT/r/ncu_$w.txt 2>&1; echo "ncu $w rc=$? at $(( $(date +%s) - start )) s"
  grep -E "Duration|DRAM Throughput|Grid Size|Block Size|Registers Per|Achieved Occ|Dynamic Shared" $OUT/r/ncu_$w.txt
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
