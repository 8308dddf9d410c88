#!/usr/bin/env bash
# Session 30 run 6: ncu of kiln's row kernel against Triton's (torch.compile) for rms_norm and
# layer_norm over 16 rows of 1024 bf16, where kiln's kernel is 0.4 us slower in CUDA graphs.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
export TORCHINDUCTOR_COMPILE_THREADS=16
R=bench/results/2026-11-29-session30
mkdir -p $OUT/r
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats"
for g in rms_16x1024 layer_16x1024 rms_1x1024 layer_1x1024; do
  timeout 100 ncu $S -k regex:kiln_row -c 1 .carry/gb/bin/kiln bench $R/$g.json --no-tune --reps 2 --device h200 > $OUT/r/ncu_kiln_$g.txt 2>&1
  echo "== kiln $g rc=$?"; grep -E "Duration|Executed Ipc A|Issue Slots Busy|Registers Per|Block Size|Grid Size|Executed Instructions  |No Eligible|Warp Cycles Per Issued" $OUT/r/ncu_kiln_$g.txt | head -12
done
timeout 200 ncu $S -k regex:triton -c 2 python3 $R/run6.py > $OUT/r/ncu_triton.txt 2>&1
echo "== triton rc=$?"; grep -E "triton_|Duration|Executed Ipc A|Issue Slots Busy|Registers Per|Block Size|Grid Size|Executed Instructions  |No Eligible|Warp Cycles Per Issued" $OUT/r/ncu_triton.txt | head -30
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
