#!/usr/bin/env bash
# Session 20 run 5: eight vectors in flight for streamed columns with few threads per SM: A/B and the column GPU test.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD
start=$(date +%s)
timeout 150 .carry/b20/codegen_region_gpu_test --gtest_filter='*ColumnKernels*:*LayerNormOfRowsFarFromZero*' > $OUT/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED \]" $OUT/region_test.txt | head
mkdir -p $OUT/ab
for rep in 1 2 3; do for b in base new; do for g in .carry/ab20/gc/*.json; do
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
grep -h "region 0" $OUT/ab/*_new_1.txt | head -12
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
