#!/usr/bin/env bash
# Session 18: A/B of row-cache changes. kiln-old = main 6ba6bef; kiln-u2/u4 = smem passes unrolled 2/4; kiln-fr = prologue frontier.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64
mkdir -p $OUT/ab
bench() { .carry/ab/kiln-$1 bench $2 --no-tune --flush-l2 --reps 50 --json $OUT/ab/$(basename $2 .json)_$1_$3.json > $OUT/ab/$(basename $2 .json)_$1_$3.txt 2>&1 || echo "FAIL $1 $2"; }
for rep in 1 2; do
  for b in old u2 u4; do for g in .carry/ab/zoo/*.json; do bench $b $g $rep; done; done
  for b in old fr; do for g in examples/add_rmsnorm.json examples/dropout_add_layernorm.json examples/dropout_add_layernorm_p0.json .carry/ab/fr/*.json; do bench $b $g $rep; done; done
done
python3 - <<'PY'
import json, glob, os, collections
out = os.environ["OUT"]; t = collections.defaultdict(list)
for f in sorted(glob.glob(f"{out}/ab/*.json")):
    n, b, rep = os.path.basename(f)[:-5].rsplit("_", 2)
    t[(n, b)].append(json.load(open(f))["graph_us"])
for n in sorted({n for n, _ in t}):
    print(f"{n:32} " + "  ".join(f"{b} {' '.join(f'{x:.2f}' for x in t[(n, b)])}" for b in ["old", "u2", "u4", "fr"] if (n, b) in t))
PY
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
