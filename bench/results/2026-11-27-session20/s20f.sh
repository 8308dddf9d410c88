#!/usr/bin/env bash
# Session 20 run 6: warp-per-row kernels in blocks of 128 threads (w128) against 256 (new).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD
start=$(date +%s)
mkdir -p $OUT/ab
for rep in 1 2 3; do for b in new w128; do for g in .carry/ab20/gr/*.json; do
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
    o, w = t[(n, "new")], t[(n, "w128")]
    if o and w: print(f"{n:32} 256 {' '.join(f'{x:8.2f}' for x in o)}  128 {' '.join(f'{x:8.2f}' for x in w)}  128/256 {statistics.median(w)/statistics.median(o):.3f}")
PY
grep -h "region 0" $OUT/ab/*_new_1.txt | head -12
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
