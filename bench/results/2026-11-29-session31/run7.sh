#!/usr/bin/env bash
# Session 31 run 7: batch norm's two kernels under ncu (clocks left alone): the statistics'
# row kernel through the transpose (15.9 us for 24.5 MB read, session 30 run 4) and the
# pointwise normalisation (does its re-read of x hit L2?); the stall reasons of each.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
mkdir -p $OUT/r
M="--clock-control none --cache-control none --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__grid_size,launch__registers_per_thread"
for g in batch_norm_train_f16 nhw_mean_nchw_bf16; do
  timeout 60 ncu $M -k regex:kiln -c 4 .carry/gb/bin/kiln bench .carry/zoo/$g.json --no-tune --reps 3 --device h200 > $OUT/r/ncu_$g.txt 2>&1
  echo "== $g rc=$?"; grep -E "kiln_[a-z]+_[0-9a-f]+|stalled|duration|dram|lts|warps_active|inst_exec|launch__" $OUT/r/ncu_$g.txt | awk '/kiln_/ {print "--", $1; next} $NF+0 >= 0.5 || /duration|dram|lts|warps|inst|launch/' | sed 's/smsp__average_warps_issue_stalled_//;s/_per_issue_active.ratio//' | awk '/^--/ {print; next} {print "   ", $1, $(NF-1), $NF}' | head -60
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
