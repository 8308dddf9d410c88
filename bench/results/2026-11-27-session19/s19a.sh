#!/usr/bin/env bash
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_CACHE_DIR=/tmp/kc
B=.carry/bundle/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
for g in .carry/g19/*.json; do
  n=$(basename $g .json)
  timeout 150 $B/kiln tune $g --reps 20 > $OUT/tune_$n.txt 2>&1; echo "$n rc=$?"
  grep -E "us|producer|error|mismatch" $OUT/tune_$n.txt | head -30
done
timeout 120 python3 .carry/sdpa19.py 2>&1 | tee $OUT/sdpa.txt
timeout 400 $B/codegen_region_gpu_test --gtest_filter='AttentionGpu*' > $OUT/attn_gpu_test.txt 2>&1; echo "attn test rc=$?"
grep -E "FAILED|PASSED|OK \]" $OUT/attn_gpu_test.txt | tail -15
