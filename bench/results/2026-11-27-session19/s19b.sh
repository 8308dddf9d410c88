#!/usr/bin/env bash
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_CACHE_DIR=/tmp/kc
B=.carry/bundle/bin
for g in .carry/g19/*.json; do
  n=$(basename $g .json)
  timeout 90 $B/kiln tune $g --reps 20 > $OUT/tune_$n.txt 2>&1; echo "$n rc=$?"
  grep -oE "tile=[0-9x]+ stages=[0-9] warps=[0-9]+ (min_blocks=[0-9] )?wgmma( producer)? [0-9.]+ us( \(default\))?( <-)?" $OUT/tune_$n.txt
done
timeout 250 $B/codegen_region_gpu_test --gtest_filter='AttentionGpu*EveryTuning*:AttentionGpu*Dropout*' > $OUT/attn_gpu_test.txt 2>&1; echo "attn test rc=$?"
grep -E "FAILED|PASSED|OK \]" $OUT/attn_gpu_test.txt | tail -15
