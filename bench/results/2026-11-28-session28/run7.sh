#!/usr/bin/env bash
# Session 28 run 7: persistent launches (KernelParams::max_grid): their GPU test, then kiln tune on row and pointwise zoo graphs.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
start=$(date +%s); B=.carry/b28; Z=.carry/zoo
mkdir -p $OUT/r
timeout 200 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.PersistentLaunches:RegionGpuTest.SmallExamples:RegionGpuTest.PointwiseSizesAndBroadcasts' > $OUT/r/gpu_test.txt 2>&1
echo "gpu test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/r/gpu_test.txt | head; grep -c "max_grid" $OUT/r/gpu_test.txt
for g in layer_norm_odd1000_f16 layer_norm_gpt2_768_bf16 rms_norm_8192_bf16 rms_norm_qk_head128_bf16 softmax_scores_1024_bf16 softmax_scores_vit197_f16 row_mean_1024_f16 bias_last_bf16 scale_rows_f16 mask_add_bf16 batch_norm_train_f16 rms_norm_odd4095_bf16; do
  echo "== $g" >> $OUT/r/tune.txt
  timeout 60 $B/kiln tune $Z/$g.json --reps 20 >> $OUT/r/tune.txt 2>&1; echo "rc=$?" >> $OUT/r/tune.txt
done
echo "tune done at $(( $(date +%s) - start )) s"
tr '|' '\n' < $OUT/r/tune.txt | grep -E "==|default|max_grid|<-" | cut -c1-120
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
