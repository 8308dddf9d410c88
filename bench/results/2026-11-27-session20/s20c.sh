#!/usr/bin/env bash
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
start=$(date +%s)
B=.carry/b20
timeout 200 $B/codegen_region_gpu_test --gtest_filter='*LayerNormOfRowsFarFromZero*:*SplitRows*:*RowKernelsUnderEveryCandidateParams*' > $OUT/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED \]" $OUT/region_test.txt | head -20
grep "layer_norm_far" $OUT/region_test.txt | grep -o "far_[0-9x]*.*max|err| [0-9.e-]*" | awk '{print $1, $NF}' | sort | uniq | head -40
mkdir -p $OUT/ab
for rep in 1 2; do for b in base new; do for n in layer_norm_4x1M_f32 layer_norm_chw_256k_f32 layer_norm_16x12288_f32 layer_norm_5120_bf16; do
  KILN_CACHE_DIR=/tmp/kc_$b timeout 60 .carry/ab20/kiln-$b bench .carry/ab20/g/$n.json --no-tune --flush-l2 --reps 50 --json $OUT/ab/${n}_${b}_$rep.json > $OUT/ab/${n}_${b}_$rep.txt 2>&1 || echo "FAIL $n $b"
done; done; done
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
