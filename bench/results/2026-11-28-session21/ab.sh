#!/usr/bin/env bash
# Session 21 run 2: A/B of kiln-base and kiln (new) over the zoo and examples; then GPU tests.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
B=.carry/b21
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
G=""
for n in ${GRAPHS:-}; do G="$G /tmp/zoo/$n.json"; done
[[ -n ${EXAMPLES:-} ]] && G="$G examples/transformer_block.json examples/layernorm.json examples/softmax.json examples/dropout_add_layernorm.json examples/add_rmsnorm.json"
if [[ -n $G ]]; then
  timeout ${ABUDGET:-400} python3 bench/ab.py --a base=$B/kiln-base --b new=$B/kiln --rounds ${ROUNDS:-2} --out /tmp/ab $G > $OUT/ab.txt 2>&1
  echo "ab rc=$? at $(( $(date +%s) - start )) s"; grep -v "^ab.py: run" $OUT/ab.txt | tail -70
  tar czf $OUT/ab.tgz -C /tmp ab
fi
if [[ -n ${TESTS:-} ]]; then
  timeout 250 $B/codegen_region_gpu_test --gtest_filter="$TESTS" > $OUT/region_test.txt 2>&1
  echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED \]" $OUT/region_test.txt | tail -20
  timeout 90 $B/runtime_executable_gpu_test > $OUT/executable_test.txt 2>&1; echo "executable rc=$?"; tail -3 $OUT/executable_test.txt
fi
if [[ -n ${SEEDS:-} ]]; then
  timeout ${GBUDGET:-120} $B/kiln_graph_diff --mode gpu --seeds $SEEDS > $OUT/graph_diff.txt 2>&1; echo "graph_diff rc=$?"; tail -5 $OUT/graph_diff.txt
fi
echo "done at $(( $(date +%s) - start )) s"
