#!/usr/bin/env bash
# Session 34 run 2: (a) bench/probes/row_along_early.cu (a norm's weight and bias loaded in the
# store pass, at the row's start, prefetched to L1, or not at all); (b) ncu on kiln's and
# torch.compile's kernels for the norms at 0.96-1.00x torch.compile.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); R=$OUT/r; mkdir -p $R
S=bench/results/2026-11-29-session34
nvcc -O3 -std=c++17 -arch=sm_90a -I templates bench/probes/row_along_early.cu -o /tmp/rae && /tmp/rae | tee $R/row_along_early.txt
/tmp/rae | tee -a $R/row_along_early.txt
echo "probe done at $(( $(date +%s) - start )) s"
for w in rms_norm_8192_bf16 layer_norm_gpt2_768_bf16 rms_norm_qk_head128_bf16; do
  timeout 60 ncu --kernel-name regex:kiln_ --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    .carry/k/bin/kiln bench .carry/zoo/$w.json --no-tune --reps 5 > $R/ncu_kiln_$w.txt 2>&1
  timeout 90 ncu --kernel-name regex:triton --launch-skip 2 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    python3 $S/compiled_loop.py $w 5 > $R/ncu_torch_$w.txt 2>&1
  echo "== ncu $w at $(( $(date +%s) - start )) s"
  for f in $R/ncu_kiln_$w.txt $R/ncu_torch_$w.txt; do
    grep -E "DRAM Throughput|Duration|Achieved Occupancy|Registers Per|Block Size|Grid Size|L1/TEX Hit|L2 Hit" $f | head -12 | tr -s ' ' | tr '\n' ';'; echo
  done
done
TORCH_LOGS=output_code python3 bench/zoo.py --kiln .carry/k/bin/kiln --no-tune --only rms_norm_8192_bf16,layer_norm_gpt2_768_bf16,rms_norm_qk_head128_bf16 --json $R/zoo.json > $R/zoo.txt 2> $R/inductor_code.txt
tail -8 $R/zoo.txt | cut -c1-200
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
echo "done at $(( $(date +%s) - start )) s"
