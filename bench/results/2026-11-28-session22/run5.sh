#!/usr/bin/env bash
# Session 22 run 5: shifted vector loads for columns of an odd width. A/B l vs f; tune; GPU tests; sanitizer.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s); B=.carry/b22
nvidia-smi --query-gpu=name --format=csv,noheader
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
timeout 120 python3 bench/ab.py --a l=$B/kiln-l --b f=$B/kiln-f --rounds 3 --out /tmp/ab_f /tmp/zoo/col_sum_odd50257_bf16.json .carry/s22/col_sum_even50256_bf16.json /tmp/zoo/col_sum_bias_grad_bf16.json > $OUT/ab_f.txt 2>&1
echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep -v "^ab.py: run" $OUT/ab_f.txt
for g in /tmp/zoo/col_sum_odd50257_bf16.json .carry/s22/col_sum_even50256_bf16.json; do
  timeout 60 $B/kiln-f tune $g --reps 30 > $OUT/tune_$(basename $g .json).txt 2>&1; tr '|' '\n' < $OUT/tune_$(basename $g .json).txt | head -14
done
timeout 60 compute-sanitizer --tool memcheck $B/kiln-f run /tmp/zoo/col_sum_odd50257_bf16.json --no-tune --check > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"; tail -4 $OUT/memcheck.txt
timeout 240 $B/codegen_region_gpu_test --gtest_filter='RegionGpuTest.ColumnKernels:RegionGpuTest.SmallExamples' > $OUT/column_test.txt 2>&1
echo "column_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED" $OUT/column_test.txt | head -20; grep -c "max|err|" $OUT/column_test.txt
timeout 60 $B/runtime_executable_gpu_test > $OUT/executable_test.txt 2>&1; echo "executable rc=$?"; tail -2 $OUT/executable_test.txt
timeout 90 $B/kiln_graph_diff --mode gpu --seeds 0:40 > $OUT/graph_diff.txt 2>&1; echo "graph_diff rc=$?"; tail -3 $OUT/graph_diff.txt
echo "done at $(( $(date +%s) - start )) s"
