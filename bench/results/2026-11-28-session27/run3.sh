#!/usr/bin/env bash
# Session 27 run 3: attention GPU tests (ping-pong without the mask), the GQA graphs' candidates, llama_gqa end to end.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
B=.carry/gb/bin
start=$(date +%s)
timeout 250 $B/codegen_region_gpu_test --gtest_filter='AttentionGpu*' > $OUT/attn_gpu_test.txt 2>&1; echo "attn test rc=$? at $(( $(date +%s) - start )) s"
grep -E "FAILED|PASSED|OK \]" $OUT/attn_gpu_test.txt | tail -14
for g in .carry/g27/*.json; do
  n=$(basename $g .json)
  timeout 60 $B/kiln tune $g --reps 20 > $OUT/tune_$n.txt 2>&1; echo "$n rc=$? at $(( $(date +%s) - start )) s"
  grep -E " us" $OUT/tune_$n.txt | head -14
done
timeout 200 python3 bench/models.py --models llama_gqa --modes eager,default --json $OUT/models_gqa.json --workdir /tmp/mg > $OUT/models_gqa.txt 2> $OUT/models_gqa.err
echo "gqa rc=$? at $(( $(date +%s) - start )) s"; grep -v "torch.onnx" $OUT/models_gqa.txt; tail -3 $OUT/models_gqa.err
