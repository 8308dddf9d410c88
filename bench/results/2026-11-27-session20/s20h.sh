#!/usr/bin/env bash
# Session 20 run 8: the refactored region test (CheckEveryCandidate) and bench/ab.py's first run.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD
start=$(date +%s)
timeout 200 .carry/b20/codegen_region_gpu_test --gtest_filter='*RowKernelsUnderEveryCandidateParams*:*LayerNormOfRowsFarFromZero*:*TiledTransposes*:*VectorisedLayouts*' > $OUT/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED \]" $OUT/region_test.txt | head
python3 bench/ab.py --a 4c1e9a5=.carry/ab20/kiln-new --b final=.carry/ab20/kiln-final --rounds 2 --out /tmp/ab \
  .carry/ab20/gr/softmax_scores_vit197_f16.json .carry/ab20/gr/layer_norm_gpt2_768_bf16.json .carry/ab20/gr/row_sum_1Mx16_f32.json | tee $OUT/ab.txt
echo "done at $(( $(date +%s) - start )) s"
