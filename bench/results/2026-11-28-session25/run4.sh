#!/usr/bin/env bash
# Session 25 run 4: stores narrow a cast's operand (no round trip) and pack 16-bit pairs with one cvt: GPU tests, random graphs, A/B against run 3's build.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); A=.carry/b25n; B=.carry/b25c; G=.carry/s25/g
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null; Z=/tmp/zoo
mkdir -p $OUT/r
timeout 200 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.SmallExamples:RegionGpuTest.RowKernelShapeSweep:RegionGpuTest.RowKernelsUnderEveryCandidateParams:RegionGpuTest.PointwiseSizesAndBroadcasts:RegionGpuTest.TiledTransposes:RegionGpuTest.VectorisedLayouts:RegionGpuTest.RotaryEmbeddingIsOneKernel:RegionGpuTest.RaggedColumnsWithFullSpaceOutputs:OpTableGpuTest.*' > $OUT/r/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]|Failure|OK \]" $OUT/r/region_test.txt | head -20
for t in codegen_dropout_gpu_test runtime_dropout_gpu_test runtime_executable_gpu_test; do timeout 100 $B/$t > $OUT/r/$t.txt 2>&1; echo "$t rc=$?"; grep -E "^\[  (PASSED|FAILED) |FAILED \]" $OUT/r/$t.txt | head -5; done
timeout 70 $B/kiln_graph_diff --mode gpu --seeds 0:400 --seconds 60 > $OUT/r/graph_diff.txt 2>&1; echo "graph_diff rc=$?"; tail -3 $OUT/r/graph_diff.txt
echo "at $(( $(date +%s) - start )) s"
timeout 300 python3 bench/ab.py --a waits=$A/kiln --b stores=$B/kiln --rounds 3 --reps 30 --out $OUT/r/ab \
  $Z/softmax_vocab32000_bf16.json $Z/softmax_vocab151936_bf16.json $Z/log_softmax_vocab128256_bf16.json $Z/softmax_vocab50257_f16.json \
  $Z/softmax_scores_1024_bf16.json $Z/softmax_scores_vit197_f16.json $Z/softmax_classes_nchw_f16.json $Z/layer_norm_5120_bf16.json \
  $Z/rms_norm_8192_bf16.json $Z/rms_norm_odd4095_bf16.json $Z/rms_norm_qk_head128_bf16.json $Z/layer_norm_gpt2_768_bf16.json \
  $Z/layer_norm_odd1000_f16.json $Z/batch_norm_train_f16.json $Z/group_norm_sd_f16.json $Z/permute_bshd_bhsd_bf16.json \
  $Z/permute_nchw_nhwc_bf16.json $Z/transpose_weight_bf16.json $Z/patchify_vit_f16.json $Z/bias_last_bf16.json $Z/scale_rows_f16.json \
  $Z/se_scale_nchw_f16.json $Z/mask_add_bf16.json $G/softmax_512x65536_f16.json $G/softmax_64x256000_bf16.json \
  $G/layer_norm_16x200000_bf16.json $G/rms_norm_96x131072_f16.json $G/softmax_300x100003_bf16.json \
  examples/layernorm.json examples/add_rmsnorm.json examples/bias_gelu.json examples/dropout_add_layernorm.json examples/swiglu.json examples/transformer_block.json > $OUT/r/ab.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep "stores/waits" $OUT/r/ab.txt | head -40
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
