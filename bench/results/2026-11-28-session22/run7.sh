#!/usr/bin/env bash
# Session 22 run 7: register-cached rows bounded to 1280 threads an SM where ptxas took <= 8 registers too many.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b22
nvidia-smi --query-gpu=name --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
G=""; for n in layer_norm_gpt2_768_bf16 rms_norm_qk_head128_bf16 softmax_scores_vit197_f16 row_min_1001_f32 layer_norm_odd1000_f16; do G="$G /tmp/zoo/$n.json"; done
timeout 200 python3 bench/ab.py --a l=$B/kiln-l --b b=$B/kiln-b --rounds 3 --out /tmp/ab_b $G examples/softmax.json examples/transformer_block.json > $OUT/ab_b.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep -v "^ab.py: run" $OUT/ab_b.txt
for n in layer_norm_gpt2_768_bf16 softmax_scores_vit197_f16; do timeout 60 $B/kiln-b run /tmp/zoo/$n.json --no-tune --check 2>&1 | grep -E "outside|error" | head -2; done
timeout 60 $B/runtime_executable_gpu_test > $OUT/executable_test.txt 2>&1; echo "executable rc=$?"; tail -1 $OUT/executable_test.txt
timeout 150 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.SmallExamples:RegionGpuTest.LayerNormOfRowsFarFromZero' > $OUT/region_test.txt 2>&1; echo "region rc=$?"; grep -E "^\[  (PASSED|FAILED)" $OUT/region_test.txt
echo "done at $(( $(date +%s) - start )) s"
