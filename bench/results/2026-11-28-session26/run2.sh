#!/usr/bin/env bash
# Session 26 run 2: the zoo (heuristic defaults), kiln tune (cold L2) on the gap workloads, the zoo tuned.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
start=$(date +%s); B=.carry/b26; Z=.carry/zoo
mkdir -p $OUT/r
timeout 280 python3 bench/zoo.py --kiln $B/kiln --no-tune --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; tail -1 $OUT/r/zoo.txt
for g in col_max_768_f32 col_sum_1Mx16_f32 col_mean_11008_f16 col_sum_odd50257_bf16 col_sum_tokens_3d_f32 nhw_sum_nhwc_f16 nhw_mean_nchw_bf16 hw_mean_nhwc_f16 mid_mean_seq_pool_bf16 mid_mean_frames_f32 softmax_axis1_16MiB_f32 softmax_classes_nchw_f16 layer_norm_chw_256k_f32 layer_norm_4x1M_f32 softmax_4x1M_f32 batch_norm_train_f16 batch_norm_train_rn50_bf16 patchify_vit_f16 transpose_mel_f32 xent_gpt2_vocab_bf16 softmax_vocab151936_bf16 layer_norm_odd1000_f16 layer_norm_gpt2_768_bf16 group_norm_sd_f16 row_sum_odd4095_bf16; do
  echo "== $g" >> $OUT/r/tune.txt
  timeout 60 $B/kiln tune $Z/$g.json --reps 15 >> $OUT/r/tune.txt 2>&1; echo "rc=$?" >> $OUT/r/tune.txt
done
echo "tune done at $(( $(date +%s) - start )) s"
timeout 200 python3 bench/zoo.py --kiln $B/kiln --kiln-only --json $OUT/r/zoo_tuned.json > $OUT/r/zoo_tuned.txt 2>&1
echo "zoo tuned rc=$? at $(( $(date +%s) - start )) s"; tail -1 $OUT/r/zoo_tuned.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
