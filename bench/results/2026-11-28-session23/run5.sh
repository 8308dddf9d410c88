#!/usr/bin/env bash
# Session 23 run 5: the channel norms from ONNX on the GPU (node tests, kiln run --check), and the
# new zoo rows against torch.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s); B=.carry/b23; S=.carry/s23
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
KILN_ONNX_NODE_TESTS=$S/node timeout 120 $B/frontends_onnx_node_gpu_test > $OUT/node_gpu.txt 2>&1; echo "node_gpu rc=$?"; grep -E "tests:|FAIL|fail" $OUT/node_gpu.txt | head
for g in tests/frontends/onnx_testdata/values/channel_norms/model.onnx tests/frontends/onnx_testdata/values/batchnorm_inference/model.onnx /tmp/zoo/group_norm_sd_f16.json /tmp/zoo/batch_norm_train_rn50_bf16.json /tmp/zoo/batch_norm_train_f16.json /tmp/zoo/nhw_mean_nchw_bf16.json $S/bn_f32_3x5x33x33.kir $S/bn_f16_2x7x6x6.kir $S/maxo.kir $S/nhwm.kir; do
  timeout 60 $B/kiln run $g --check --random 3 > $OUT/check_$(basename $(dirname $g))_$(basename $g).txt 2>&1; echo "check $g rc=$?"
done
tail -4 $OUT/check_channel_norms_model.onnx.txt
timeout 200 python3 bench/zoo.py --kiln $B/kiln --no-tune --only group_norm_sd_f16,batch_norm_train_rn50_bf16,batch_norm_train_f16,nhw_mean_nchw_bf16 --json $OUT/zoo.json > $OUT/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^zoo.py\|^$\|warn\|Online\|split the\|Cut an\|important\|softmax.$\|UserWarning" $OUT/zoo.txt | tail -12
echo "done at $(( $(date +%s) - start )) s"
