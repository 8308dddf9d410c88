#!/usr/bin/env bash
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
B=.carry/bundle/bin
start=$(date +%s)
timeout 230 $B/codegen_region_gpu_test --gtest_filter='AttentionGpu*:-*EveryTuning*' > $OUT/attn_gpu_test.txt 2>&1; echo "attn test rc=$? at $(( $(date +%s) - start )) s"
grep -E "FAILED|PASSED|OK \]" $OUT/attn_gpu_test.txt | tail -12
for g in .carry/g19c/*.json; do
  n=$(basename $g .json)
  timeout 80 $B/kiln tune $g --reps 20 > $OUT/tune_$n.txt 2>&1; echo "$n rc=$? at $(( $(date +%s) - start )) s"
  grep -oE "tile=[0-9x]+ stages=[0-9] warps=[0-9]+ (min_blocks=[0-9] )?wgmma [0-9.]+ us( \(default\))?( <-)?" $OUT/tune_$n.txt
done
timeout 200 python3 bench/models.py --models llama_gqa --modes eager,default --json $OUT/models_gqa.json --workdir /tmp/mg > $OUT/models_gqa.txt 2> $OUT/models_gqa.err
echo "gqa rc=$? at $(( $(date +%s) - start )) s"; grep -v "torch.onnx" $OUT/models_gqa.txt; tail -3 $OUT/models_gqa.err
