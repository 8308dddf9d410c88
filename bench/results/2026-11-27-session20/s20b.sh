#!/usr/bin/env bash
# Session 20 run 2: the MeanVar pair only for split/streamed rows: GPU tests, random graphs, A/B.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
B=.carry/b20
timeout 230 $B/codegen_region_gpu_test --gtest_filter='*SmallExamples*:*RowKernelShapeSweep*:*RowKernelsUnderEveryCandidateParams*:*SplitRows*:*LayerNormOfRowsFarFromZero*' > $OUT/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED \]" $OUT/region_test.txt | head -20
grep "layer_norm_far" $OUT/region_test.txt | grep "max|err|" | head -30 > $OUT/far_errors.txt
timeout 60 $B/runtime_executable_gpu_test > $OUT/executable_test.txt 2>&1; echo "executable rc=$?"; tail -1 $OUT/executable_test.txt
mkdir -p $OUT/graphs
for i in 0 1 2 3 4 5 6 7; do
  timeout 120 $B/kiln_graph_diff --mode gpu --seeds 0:2000 --shard $i/8 --seconds 80 --save $OUT/graphs/failures > $OUT/graphs/shard-$i.log 2>&1 &
done; wait
timeout 60 $B/kiln_graph_diff --mode gpu --replay tests/differential/regressions/*.kir > $OUT/graphs/regressions.log 2>&1
awk '/^graph_diff gpu:/ {g += $3; r += $7; k += $9; e += $11; m += $13} END {printf "graph_diff gpu: %d graphs, %d regions, %d kernels; %d errors, %d mismatches\n", g, r, k, e, m}' $OUT/graphs/shard-*.log
tail -1 $OUT/graphs/regressions.log; grep -hE "MISMATCH|ERROR" $OUT/graphs/*.log | head -5
echo "graphs at $(( $(date +%s) - start )) s"
mkdir -p $OUT/ab
for rep in 1 2; do for b in base new; do for g in .carry/ab20/g/*.json; do
  n=$(basename $g .json)
  KILN_CACHE_DIR=/tmp/kc_$b timeout 60 .carry/ab20/kiln-$b bench $g --no-tune --flush-l2 --reps 50 --json $OUT/ab/${n}_${b}_$rep.json > $OUT/ab/${n}_${b}_$rep.txt 2>&1 || echo "FAIL $n $b"
done; done; done
echo "ab done at $(( $(date +%s) - start )) s"
python3 - <<'PY'
import json, glob, os, collections, statistics
out = os.environ["OUT"]; t = collections.defaultdict(list)
for f in sorted(glob.glob(f"{out}/ab/*.json")):
    n, b, rep = os.path.basename(f)[:-5].rsplit("_", 2)
    t[(n, b)].append(json.load(open(f))["graph_us"])
for n in sorted({n for n, _ in t}):
    o, w = t[(n, "base")], t[(n, "new")]
    if o and w: print(f"{n:32} base {' '.join(f'{x:8.2f}' for x in o)}  new {' '.join(f'{x:8.2f}' for x in w)}  new/base {statistics.median(w)/statistics.median(o):.3f}")
PY
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
