#!/usr/bin/env bash
# Session 32 run 1: where kiln is below torch.compile in the zoo. Every tuning candidate of the
# losing workloads timed by `kiln tune`, then the zoo harness on the same workloads (torch eager
# and torch.compile in the same process, L2 flushed), then ncu on the two column reductions.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); mkdir -p $OUT/r
W="col_max_768_f32 col_sum_odd50257_bf16 transpose_mel_f32 patchify_vit_f16 layer_norm_chw_256k_f32 batch_norm_train_rn50_last_bf16 mid_mean_seq_pool_bf16 layer_norm_odd1000_f16"
for w in $W; do timeout 60 .carry/gb/bin/kiln tune .carry/zoo/$w.json --reps 15 > $OUT/r/tune_$w.txt 2>&1; echo "$w rc=$?"; done
echo "tune done at $(( $(date +%s) - start )) s"
timeout 200 python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --only $(echo $W | tr ' ' ',') --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -E "^workload|_f32 |_bf16 |_f16 |^zoo:" $OUT/r/zoo.txt | grep -v "^zoo.py" | cut -c1-200
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum'
for w in col_max_768_f32 col_sum_odd50257_bf16; do timeout 60 ncu --clock-control none --metrics "$M" -k regex:kiln -c 3 .carry/gb/bin/kiln bench .carry/zoo/$w.json --no-tune --reps 2 > $OUT/r/ncu_$w.txt 2>&1; done
echo "ncu at $(( $(date +%s) - start )) s"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
