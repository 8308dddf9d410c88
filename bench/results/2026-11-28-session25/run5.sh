#!/usr/bin/env bash
# Session 25 run 5: the committed build (dbb87f4): the full zoo against torch on the H200, more random graphs, memcheck on bf16 examples.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s); B=.carry/b25c
python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null; Z=/tmp/zoo
mkdir -p $OUT/r
timeout 50 $B/kiln_graph_diff --mode gpu --seeds 1000:400 --seconds 40 > $OUT/r/graph_diff.txt 2>&1; echo "graph_diff rc=$?"; tail -1 $OUT/r/graph_diff.txt
for g in examples/dropout_add_layernorm.json $Z/softmax_scores_vit197_f16.json; do
  timeout 60 compute-sanitizer --tool memcheck $B/kiln run $g --check --random 1 > $OUT/r/memcheck_$(basename $g .json).txt 2>&1; echo "memcheck $(basename $g) rc=$?"; grep -E "ERROR SUMMARY" $OUT/r/memcheck_$(basename $g .json).txt
done
timeout 330 python3 bench/zoo.py --kiln $B/kiln --no-tune --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^zoo.py\|^$\|warn\|Online\|split the\|Cut an\|important\|softmax.$\|UserWarning" $OUT/r/zoo.txt | tail -70
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
