#!/usr/bin/env bash
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64
mkdir -p $OUT/ab
for rep in 1 2; do for b in new sat; do for g in .carry/ab19/g/*.json; do
  n=$(basename $g .json)
  KILN_CACHE_DIR=/tmp/kc_$b .carry/ab19/kiln-$b bench $g --no-tune --flush-l2 --reps 50 --json $OUT/ab/${n}_${b}_$rep.json > $OUT/ab/${n}_${b}_$rep.txt 2>&1 || echo "FAIL $n $b"
done; done; done
python3 - <<'PY'
import json, glob, os, collections, statistics
out = os.environ["OUT"]; t = collections.defaultdict(list)
for f in sorted(glob.glob(f"{out}/ab/*.json")):
    n, b, rep = os.path.basename(f)[:-5].rsplit("_", 2)
    t[(n, b)].append(json.load(open(f))["graph_us"])
for n in sorted({n for n, _ in t}):
    o, w = t[(n, "new")], t[(n, "sat")]
    print(f"{n:28} old {' '.join(f'{x:7.2f}' for x in o)}  new {' '.join(f'{x:7.2f}' for x in w)}  sat/new {statistics.median(w)/statistics.median(o):.3f}")
PY
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
