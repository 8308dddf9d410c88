#!/usr/bin/env bash
# Session 31 run 3: two shared-memory stages for row kernels (a block copies its next row in
# while it reduces and stores the current one). The new GPU test (every two-stage candidate
# against the interpreter), then `kiln tune` (every candidate timed, L2 flushed) on the zoo's
# row workloads whose default keeps the row in shared memory.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
mkdir -p $OUT/r
start=$(date +%s)
timeout 200 .carry/gb/bin/codegen_region_gpu_test --gtest_filter='*TwoStage*' > $OUT/r/twostage_test.txt 2>&1
echo "== test rc=$? at $(( $(date +%s) - start )) s"; grep -E "OK|FAILED|PASSED|mismatch|error" $OUT/r/twostage_test.txt | head -20
for g in layer_norm_chw_256k_f32 softmax_vocab151936_bf16 log_softmax_vocab128256_bf16 softmax_vocab50257_f16 softmax_vocab32000_bf16 group_norm_sd_f16 log_softmax_9x50257_f32; do
  timeout 90 .carry/gb/bin/kiln tune .carry/zoo/$g.json --reps 15 > $OUT/r/tune_$g.txt 2>&1
  echo "== tune $g rc=$?"; tr '|' '\n' < $OUT/r/tune_$g.txt | grep -E "default|<-|stages=2"
done
echo "done at $(( $(date +%s) - start )) s"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
