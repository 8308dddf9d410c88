#!/usr/bin/env bash
# Session 31 run 2: isolating the long-row kernels' costs. The same shapes without the part
# suspected: layer_norm without its weight and bias (their loads in the store pass), softmax's
# row max then subtract (no exponentials), sum of exponentials (no row-shaped output); and the
# stall reasons (ncu, clocks left alone) of the default kernels.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
R=bench/results/2026-11-29-session31
mkdir -p $OUT/r
for g in .carry/zoo/layer_norm_chw_256k_f32 $R/ln_chw_noaff_f32 .carry/zoo/layer_norm_4x1M_f32 $R/ln_4x1M_noaff_f32 .carry/zoo/softmax_vocab151936_bf16 $R/maxsub_vocab151936_bf16 $R/sumexp_vocab151936_bf16; do
  b=$(basename $g)
  timeout 60 .carry/gb/bin/kiln bench $g.json --no-tune --flush-l2 --reps 20 --device h200 > $OUT/r/bench_$b.txt 2>&1
  echo "== bench $b rc=$?: $(grep -E 'graph:' $OUT/r/bench_$b.txt) | $(grep -oE 'copy / time = [0-9.]+' $OUT/r/bench_$b.txt)"
done
M="--clock-control none --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed"
for g in .carry/zoo/layer_norm_chw_256k_f32 $R/ln_chw_noaff_f32 .carry/zoo/softmax_vocab151936_bf16 $R/maxsub_vocab151936_bf16 .carry/zoo/layer_norm_4x1M_f32; do
  b=$(basename $g)
  timeout 60 ncu $M -k regex:kiln_row -c 1 .carry/gb/bin/kiln bench $g.json --no-tune --reps 2 --device h200 > $OUT/r/stall_$b.txt 2>&1
  echo "== stalls $b rc=$?"; grep -E "stalled|duration|dram" $OUT/r/stall_$b.txt | awk '$NF+0 >= 0.5 || /duration|dram/' | sed 's/smsp__average_warps_issue_stalled_//;s/_per_issue_active.ratio//' | awk '{print $1, $NF}' | tr '\n' ';'; echo
done
timeout 60 .carry/gb/bin/kiln tune $R/ln_chw_noaff_f32.json --reps 15 > $OUT/r/tune_ln_chw_noaff.txt 2>&1; echo "== tune rc=$?"; cat $OUT/r/tune_ln_chw_noaff.txt | tr '|' '\n' | head -14
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
