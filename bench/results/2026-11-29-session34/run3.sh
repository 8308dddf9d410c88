#!/usr/bin/env bash
# Session 34 run 3: column tiles cached in shared memory (column_reduce.cuh's kSharedCache, new
# tuning candidates). (a) The GPU test of every column candidate against the interpreter;
# (b) kiln tune on the column regions that read their inputs more than once.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); R=$OUT/r; mkdir -p $R
timeout 300 .carry/k/bin/codegen_region_gpu_test --gtest_filter='*ColumnKernels*:*RaggedColumns*' > $R/gpu_test.txt 2>&1
echo "gpu test rc=$? at $(( $(date +%s) - start )) s"; grep -E "smem|FAILED|PASSED|OK \]" $R/gpu_test.txt | grep -E "chunk=0[^ ]* .*smem|FAILED|PASSED|OK \]" | tail -15
for g in .carry/zoo/softmax_classes_nchw_f16.json .carry/zoo/softmax_axis1_frames_f32.json .carry/zoo/softmax_axis1_16MiB_f32.json .carry/zoo/layer_norm_channels_first_f32.json .carry/cc/*.json; do
  w=$(basename $g .json)
  timeout 90 .carry/k/bin/kiln tune $g --reps 15 > $R/tune_$w.txt 2>&1
  echo "== $w rc=$?"; tr '|' '\n' < $R/tune_$w.txt | grep -E "us" | cut -c1-150
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
echo "done at $(( $(date +%s) - start )) s"
