#!/usr/bin/env bash
# Session 32 run 2: the row kernels' new block rule and index price (the batch norms, checked
# against the interpreter); every candidate of the column workloads (kiln tune); ncu of the
# 768-column max under its default launch and its tuned one (occupancy, registers, DRAM).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); mkdir -p $OUT/r
timeout 200 python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --check --only batch_norm_train_rn50_last_bf16,batch_norm_train_f16,batch_norm_train_rn50_bf16,nhw_mean_nchw_bf16 --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -E "^workload|_f32 |_bf16 |_f16 |^zoo:|problem|region" $OUT/r/zoo.txt | grep -v "^zoo.py" | cut -c1-200
for w in col_sum_bias_grad_bf16 col_sum_1Mx16_f32 col_mean_11008_f16 col_sum_tokens_3d_f32 mid_max_points_f32 mid_sum_heads_bf16 mid_mean_frames_f32 hw_mean_nhwc_f16 nhw_sum_nhwc_f16; do timeout 60 .carry/gb/bin/kiln tune .carry/zoo/$w.json --reps 15 > $OUT/r/tune_$w.txt 2>&1; done
echo "tune at $(( $(date +%s) - start )) s"
M='launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,sm__cycles_active.avg,sm__cycles_elapsed.max'
timeout 60 ncu --clock-control none --metrics "$M" -k regex:kiln_col -c 1 .carry/gb/bin/kiln bench .carry/zoo/col_max_768_f32.json --no-tune --reps 2 > $OUT/r/ncu_default.txt 2>&1
timeout 60 .carry/gb/bin/kiln tune .carry/zoo/col_max_768_f32.json --reps 15 > $OUT/r/tune_col_max_768_f32.txt 2>&1
timeout 60 ncu --clock-control none --metrics "$M" -k regex:kiln_col -c 1 .carry/gb/bin/kiln bench .carry/zoo/col_max_768_f32.json --reps 2 > $OUT/r/ncu_tuned.txt 2>&1
echo "ncu at $(( $(date +%s) - start )) s"; grep -hE "kiln_col|registers|occupancy|grid|warps_active|dram|gpu__time|cycles" $OUT/r/ncu_*.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
