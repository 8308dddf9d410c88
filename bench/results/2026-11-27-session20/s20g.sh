#!/usr/bin/env bash
# Session 20 run 7: short rows in 128-thread blocks (kiln-final) against 4c1e9a5 (kiln-new): GPU tests, random graphs, A/B.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD
start=$(date +%s)
B=.carry/b20
timeout 300 $B/codegen_region_gpu_test --gtest_filter='*SmallExamples*:*RowKernelShapeSweep*:*RowKernelsUnderEveryCandidateParams*:*SplitRows*:*LayerNormOfRowsFarFromZero*:*ColumnKernels*' > $OUT/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED \]" $OUT/region_test.txt | head -20
for t in runtime_executable_gpu_test runtime_cuda_graph_gpu_test; do timeout 90 $B/$t > $OUT/$t.txt 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/$t.txt | tr '\n' ' ')"; done
mkdir -p $OUT/graphs
for i in 0 1 2 3 4 5 6 7; do
  timeout 90 $B/kiln_graph_diff --mode gpu --seeds 2000:4000 --shard $i/8 --seconds 60 --save $OUT/graphs/failures > $OUT/graphs/shard-$i.log 2>&1 &
done; wait
timeout 60 $B/kiln_graph_diff --mode gpu --replay tests/differential/regressions/*.kir > $OUT/graphs/regressions.log 2>&1
awk '/^graph_diff gpu:/ {g += $3; r += $7; k += $9; e += $11; m += $13} END {printf "graph_diff gpu: %d graphs, %d regions, %d kernels; %d errors, %d mismatches\n", g, r, k, e, m}' $OUT/graphs/shard-*.log
tail -1 $OUT/graphs/regressions.log; grep -hE "MISMATCH|ERROR" $OUT/graphs/*.log | head -5
tar czf $OUT/graphs.tgz -C $OUT graphs && rm -rf $OUT/graphs
echo "graphs at $(( $(date +%s) - start )) s"
mkdir -p $OUT/ab
for rep in 1 2; do for b in new final; do for g in .carry/ab20/gr/*.json; do
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
    o, w = t[(n, "new")], t[(n, "final")]
    if o and w: print(f"{n:32} 4c1e9a5 {' '.join(f'{x:8.2f}' for x in o)}  final {' '.join(f'{x:8.2f}' for x in w)}  final/4c1e9a5 {statistics.median(w)/statistics.median(o):.3f}")
PY
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
