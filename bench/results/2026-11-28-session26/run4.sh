#!/usr/bin/env bash
# Session 26 run 4: ncu of the streamed row kernels (batch-norm statistics and normalize, the GPT-2 cross entropy) and a column kernel; same-size copies.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b26; Z=.carry/zoo
mkdir -p $OUT/r
timeout 60 python3 .carry/s26/copy_sizes.py > $OUT/r/copy_sizes.txt 2>&1; echo "copy rc=$?"; cat $OUT/r/copy_sizes.txt
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
for spec in "batch_norm_train_f16:kiln_row_" "batch_norm_train_f16:kiln_pw" "xent_gpt2_vocab_bf16:kiln_row_" "col_sum_odd50257_bf16:kiln_col_" "nhw_mean_nchw_bf16:kiln_row_"; do
  g=${spec%%:*}; k=${spec##*:}
  timeout 90 ncu --kernel-name regex:$k --launch-skip 3 --launch-count 1 $S $B/kiln_base bench $Z/$g.json --no-tune --reps 5 > $OUT/r/ncu_${g}_$k.txt 2>&1; echo "ncu $g $k rc=$?"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
