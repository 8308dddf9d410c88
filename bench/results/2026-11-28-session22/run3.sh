#!/usr/bin/env bash
# Session 22 run 3: strided column lanes. GPU column tests; A/B l vs s; tune table; sanitizer.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b22
nvidia-smi --query-gpu=name --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
timeout 100 python3 bench/ab.py --a l=$B/kiln-l --b s=$B/kiln-s --rounds 3 --out /tmp/ab_s /tmp/zoo/col_sum_odd50257_bf16.json /tmp/zoo/col_sum_bias_grad_bf16.json > $OUT/ab_s.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep -v "^ab.py: run" $OUT/ab_s.txt
timeout 60 $B/kiln-s tune /tmp/zoo/col_sum_odd50257_bf16.json --reps 30 > $OUT/tune.txt 2>&1; tr '|' '\n' < $OUT/tune.txt | head -20
timeout 60 $B/kiln-s run /tmp/zoo/col_sum_odd50257_bf16.json --check > $OUT/check.txt 2>&1; echo "check rc=$?"; tail -3 $OUT/check.txt
timeout 300 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.ColumnKernels' > $OUT/column_test.txt 2>&1
echo "column_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED|strided|50257|1001|x37|4095" $OUT/column_test.txt | head -40
timeout 60 compute-sanitizer --tool memcheck $B/kiln-s run /tmp/zoo/col_sum_odd50257_bf16.json --no-tune --check > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"; tail -4 $OUT/memcheck.txt
echo "done at $(( $(date +%s) - start )) s"
