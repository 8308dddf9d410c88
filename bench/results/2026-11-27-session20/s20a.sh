#!/usr/bin/env bash
# Session 20 run 1: GPU tests of the MeanVar pair, A/B old/new kiln, zoo norm rows vs torch.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
B=.carry/b20
timeout 200 $B/codegen_region_gpu_test --gtest_filter='*SmallExamples*:*RowKernelShapeSweep*:*RowKernelsUnderEveryCandidateParams*:*SplitRows*:*LayerNormOfRowsFarFromZero*' > $OUT/region_test.txt 2>&1
echo "region_test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED \]" $OUT/region_test.txt | head -20
timeout 60 $B/runtime_executable_gpu_test > $OUT/executable_test.txt 2>&1; echo "executable rc=$?"; tail -3 $OUT/executable_test.txt
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
timeout $(( 560 - ($(date +%s) - start) )) python3 bench/zoo.py --kiln .carry/ab20/kiln-new --no-tune --cost-device h200 \
  --only layer_norm_chw_256k_f32,layer_norm_5120_bf16,layer_norm_16x12288_f32,layer_norm_gpt2_768_bf16,layer_norm_4x1M_f32,layer_norm_odd1000_f16,batch_norm_train_f16 \
  --json $OUT/zoo_norm.json > $OUT/zoo_norm.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^$" $OUT/zoo_norm.txt | tail -14
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
