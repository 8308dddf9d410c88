#!/usr/bin/env bash
# Session 26 run 6: kiln tune with the one-wave streamed candidates on the split rows whose blocks wait.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_CACHE_DIR=/tmp/kc
start=$(date +%s); B=.carry/b26; Z=.carry/zoo
mkdir -p $OUT/r
for g in layer_norm_chw_256k_f32 layer_norm_4x1M_f32 softmax_4x1M_f32 layer_norm_16x12288_f32 softmax_12x32000_f32 log_softmax_9x50257_f32 group_norm_sd_f16 softmax_vocab151936_bf16 log_softmax_vocab128256_bf16 layer_norm_channels_first_f32; do
  echo "== $g" >> $OUT/r/tune.txt
  timeout 60 $B/kiln_c6 tune $Z/$g.json --reps 20 >> $OUT/r/tune.txt 2>&1; echo "rc=$?" >> $OUT/r/tune.txt
done
echo "tune done at $(( $(date +%s) - start )) s"
grep -E "^==|tuned region" $OUT/r/tune.txt | sed 's/ | /\n    /g' | grep -E "^==|<-|default|block=512 vec=[0-9] rows=1 chunk=[0-9]+ split=[0-9]+$|split=[0-9]+ [0-9.]+ us$" | cut -c 1-120
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
