#!/usr/bin/env bash
# Session 33 run 2: (a) how many thread-block clusters of each size the GPU keeps resident
# (bench/probes/cluster_occupancy.cu); (b) kiln tune over the norms whose weights are now
# prefetched to L2 and the column softmax now priced for its lone phases; (c) scripts/gpu-check
# (tests); (d) the zoo's changed workloads with --check.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16 KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s); mkdir -p $OUT/r
(/usr/local/cuda/bin/nvcc -O2 -arch=sm_90a bench/probes/cluster_occupancy.cu -o /tmp/co && /tmp/co) > $OUT/r/cluster_occupancy.txt 2>&1; cat $OUT/r/cluster_occupancy.txt
for w in layer_norm_chw_256k_f32 layer_norm_4x1M_f32 layer_norm_16x12288_f32 layer_norm_5120_bf16 rms_norm_8192_bf16 layer_norm_gpt2_768_bf16 softmax_axis1_16MiB_f32; do
  timeout 60 .carry/gb/bin/kiln tune .carry/zoo/$w.json --reps 15 > $OUT/r/tune_$w.txt 2>&1; echo "== $w rc=$?"; tr '|' '\n' < $OUT/r/tune_$w.txt | grep -E "us" | head -4
done
echo "tune done at $(( $(date +%s) - start )) s"
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 400 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "passed|failed" $OUT/r/gpu_check.txt | grep -v " 0 failed" | tail -5; grep -E "cases" $OUT/r/gpu_check.txt | tail -2
tar czf $OUT/r/gc.tgz -C $OUT/r gpu-check 2>/dev/null && rm -rf $OUT/r/gpu-check
left=$(( 590 - ($(date +%s) - start) ))
timeout $left python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --check --only softmax_axis1_16MiB_f32,layer_norm_chw_256k_f32,layer_norm_4x1M_f32,layer_norm_16x12288_f32,layer_norm_5120_bf16,rms_norm_8192_bf16,rms_norm_odd4095_bf16,layer_norm_gpt2_768_bf16,layer_norm_odd1000_f16,rms_norm_qk_head128_bf16 --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -E "^workload|_f32 |_bf16 |_f16 |^zoo:|problem|region" $OUT/r/zoo.txt | grep -v "^zoo.py" | cut -c1-200
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
