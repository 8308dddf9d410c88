#!/usr/bin/env bash
# Session 20 run 4: kiln tune's candidates, and tuned vs untuned with a flushed L2, on rows the zoo shows off.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64
start=$(date +%s)
mkdir -p $OUT/tune $OUT/bench
for n in layer_norm_gpt2_768_bf16 layer_norm_odd1000_f16 rms_norm_odd4095_bf16 row_sum_odd4095_bf16 softmax_scores_1024_bf16 col_mean_11008_f16 col_sum_bias_grad_bf16 col_sum_odd50257_bf16; do
  KILN_CACHE_DIR=/tmp/kc_t timeout 90 .carry/ab20/kiln-new tune .carry/ab20/g/$n.json --reps 30 > $OUT/tune/$n.txt 2>&1 || echo "tune FAIL $n"
  for mode in notune tuned; do
    flag=$([[ $mode == notune ]] && echo --no-tune)
    KILN_CACHE_DIR=/tmp/kc_t timeout 60 .carry/ab20/kiln-new bench .carry/ab20/g/$n.json $flag --flush-l2 --reps 50 > $OUT/bench/${n}_$mode.txt 2>&1
  done
  echo "$n: notune $(grep -m1 -o 'graph: [0-9.]* us' $OUT/bench/${n}_notune.txt)  tuned $(grep -m1 -o 'graph: [0-9.]* us' $OUT/bench/${n}_tuned.txt)"
done
echo "done at $(( $(date +%s) - start )) s"
