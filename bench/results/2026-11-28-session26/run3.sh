#!/usr/bin/env bash
# Session 26 run 3: the row kernel's streamed loop with its loads first (explicit kUnroll), at
# the default unroll 2 (u2) and 4 (u4), against run 2's build (base); GPU tests; checks.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b26; Z=.carry/zoo
mkdir -p $OUT/r
G="$Z/batch_norm_train_f16.json $Z/batch_norm_train_rn50_bf16.json $Z/nhw_mean_nchw_bf16.json $Z/xent_gpt2_vocab_bf16.json $Z/hw_mean_nchw_bf16.json $Z/group_norm_sd_f16.json $Z/layer_norm_channels_first_f32.json $Z/log_softmax_vocab128256_bf16.json $Z/row_sum_1x1M_f32.json $Z/amax_all_bf16.json $Z/softmax_vocab50257_f16.json"
timeout 200 python3 bench/ab.py --a base=$B/kiln_base --b u2=$B/kiln_u2 --rounds 3 --reps 30 --out $OUT/r/ab_u2 $G > $OUT/r/ab_u2.txt 2>&1
echo "ab u2 rc=$? at $(( $(date +%s) - start )) s"; tail -13 $OUT/r/ab_u2.txt
timeout 200 python3 bench/ab.py --a u2=$B/kiln_u2 --b u4=$B/kiln_u4 --rounds 3 --reps 30 --out $OUT/r/ab_u4 $G > $OUT/r/ab_u4.txt 2>&1
echo "ab u4 rc=$? at $(( $(date +%s) - start )) s"; tail -13 $OUT/r/ab_u4.txt
for g in batch_norm_train_f16 xent_gpt2_vocab_bf16 group_norm_sd_f16 row_sum_odd4095_bf16 layer_norm_4x1M_f32 log_softmax_9x50257_f32; do
  for b in kiln_u2 kiln_u4; do timeout 60 $B/$b run $Z/$g.json --check --random 2 --no-tune > $OUT/r/check_${b}_$g.txt 2>&1; echo "check $b $g rc=$?"; done
done
for t in codegen_region_gpu_test runtime_executable_gpu_test; do timeout 150 $B/$t > $OUT/r/$t.txt 2>&1; echo "$t rc=$?"; tail -2 $OUT/r/$t.txt; done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
