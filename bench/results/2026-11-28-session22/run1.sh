#!/usr/bin/env bash
# Session 22 run 1: zoo (kiln only) with kiln-ts; A/B base vs t (template guards), t vs ts (sync costs); GPU tests.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
B=.carry/b22
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
if [[ -n ${ZOO:-} ]]; then
  timeout 200 python3 bench/zoo.py --kiln ${ZOOK:-$B/kiln-ts} --kiln-only --no-tune --json $OUT/zoo.json > $OUT/zoo.txt 2>&1
  echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^zoo.py\|^$" $OUT/zoo.txt | tail -64
fi
ab() {  # ab NAME A B GRAPHS...
  local name=$1 a=$2 b=$3; shift 3
  local G=""; for n in "$@"; do G="$G /tmp/zoo/$n.json"; done
  timeout ${ABUDGET:-200} python3 bench/ab.py --a ${a}=$B/kiln-$a --b ${b}=$B/kiln-$b --rounds ${ROUNDS:-2} --out /tmp/ab_$name $G > $OUT/ab_$name.txt 2>&1
  echo "ab $name rc=$? at $(( $(date +%s) - start )) s"; grep -v "^ab.py: run" $OUT/ab_$name.txt
}
[[ -n ${AB1:-} ]] && ab guards base t $AB1
[[ -n ${AB2:-} ]] && ab sync t ts $AB2
tar czf $OUT/ab.tgz -C /tmp $(cd /tmp && ls -d ab_* 2>/dev/null) 2>/dev/null
if [[ -n ${TESTS:-} ]]; then
  timeout 250 $B/codegen_region_gpu_test --gtest_filter="$TESTS" > $OUT/region_test.txt 2>&1
  echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |FAILED \]" $OUT/region_test.txt | tail -20
  timeout 120 $B/runtime_executable_gpu_test > $OUT/executable_test.txt 2>&1; echo "executable rc=$?"; tail -3 $OUT/executable_test.txt
fi
if [[ -n ${SEEDS:-} ]]; then
  timeout ${GBUDGET:-100} $B/kiln_graph_diff --mode gpu --seeds $SEEDS > $OUT/graph_diff.txt 2>&1; echo "graph_diff rc=$?"; tail -5 $OUT/graph_diff.txt
fi
echo "done at $(( $(date +%s) - start )) s"
