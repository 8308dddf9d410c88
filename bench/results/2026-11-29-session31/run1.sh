#!/usr/bin/env bash
# Session 31 run 1: where the long-row kernels lose against the copy. ncu (clocks left alone) of
# the default row kernel of the zoo's long-row workloads below 0.8 of the same-size copy, with
# the PM sampling timeline (DRAM throughput over the kernel's life) and the warp stall reasons.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
mkdir -p $OUT/r
S="--clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section PmSampling"
for g in layer_norm_chw_256k_f32 softmax_vocab151936_bf16 layer_norm_4x1M_f32 xent_gpt2_vocab_bf16 log_softmax_vocab128256_bf16 softmax_4x1M_f32; do
  timeout 80 ncu $S -k regex:kiln_row -c 1 .carry/gb/bin/kiln bench .carry/zoo/$g.json --no-tune --flush-l2 --reps 2 --device h200 > $OUT/r/ncu_$g.txt 2>&1
  echo "== $g rc=$?"; grep -E "^  [a-z_]+.*kiln_row|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Cluster Size|Dynamic Shared|Achieved Occupancy|Warp Cycles Per Issued|Stall [A-Z]" $OUT/r/ncu_$g.txt | head -16
done
for g in layer_norm_chw_256k_f32 softmax_vocab151936_bf16 layer_norm_4x1M_f32; do
  timeout 60 .carry/gb/bin/kiln bench .carry/zoo/$g.json --no-tune --flush-l2 --reps 20 --device h200 > $OUT/r/bench_$g.txt 2>&1
  echo "== bench $g rc=$?"; tail -4 $OUT/r/bench_$g.txt
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
