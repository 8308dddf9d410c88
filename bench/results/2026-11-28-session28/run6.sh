#!/usr/bin/env bash
# Session 28 run 6: per-step times of the fixture-size models (where the predictions miss).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
mkdir -p $OUT/r
for m in ce_head gpt2_sdpa gpt2_dropout llama; do
  timeout 60 .carry/gb/bin/kiln bench tests/frontends/onnx_fixtures/${m}_opset18/model.onnx --no-tune --cuda-graph --reps 200 --device h200 --json $OUT/r/$m.json > $OUT/r/$m.txt 2>&1
  echo "== $m rc=$?"; cat $OUT/r/$m.txt | cut -c1-180
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
