#!/usr/bin/env bash
# Session 30 run 4: kiln tune (every launch candidate timed, L2 flushed) on the zoo's row
# workloads below 0.8 of the copy floor, to see which launch shapes the fit should choose.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
start=$(date +%s)
mkdir -p $OUT/r
for w in layer_norm_chw_256k_f32 layer_norm_4x1M_f32 softmax_vocab151936_bf16 xent_gpt2_vocab_bf16 log_softmax_vocab128256_bf16 softmax_4x1M_f32 softmax_12x32000_f32 layer_norm_16x12288_f32 batch_norm_train_f16 softmax_vocab50257_f16; do
  timeout 100 .carry/gb/bin/kiln tune .carry/zoo/$w.json --reps 15 --device h200 > $OUT/r/tune_$w.txt 2>&1
  echo "== $w rc=$? at $(( $(date +%s) - start )) s"
  grep -E "tuned region" $OUT/r/tune_$w.txt | sed 's/ | /\n    /g' | grep -E "default|<-" 
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
