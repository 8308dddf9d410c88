#!/usr/bin/env bash
# Session 34 run 1: the zoo's workloads below torch.compile. (a) the zoo row with inductor's
# generated code (TORCH_LOGS=output_code); (b) every kiln candidate timed (kiln tune); (c) ncu on
# kiln's kernel and on torch.compile's, side by side.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_CACHE_DIR=/tmp/kc
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s); R=$OUT/r; mkdir -p $R
S=bench/results/2026-11-29-session34
W="col_sum_odd50257_bf16 transpose_add_4096_f32 row_sum_1Mx16_f32 transpose_mel_f32 col_max_768_f32 patchify_vit_f16 layer_norm_odd1000_f16"
TORCH_LOGS=output_code python3 bench/zoo.py --kiln .carry/gb/bin/kiln --no-tune --only ${W// /,} --json $R/zoo.json > $R/zoo.txt 2> $R/inductor_code.txt
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; tail -12 $R/zoo.txt | cut -c1-200
for w in $W; do
  timeout 60 .carry/gb/bin/kiln tune .carry/zoo/$w.json --reps 15 > $R/tune_$w.txt 2>&1
  echo "== $w rc=$?"; tr '|' '\n' < $R/tune_$w.txt | grep -E "us" | sort -t' ' -k1 | head -40 | cut -c1-150
done
echo "tune done at $(( $(date +%s) - start )) s"
for w in $W; do
  timeout 60 ncu --kernel-name regex:kiln_ --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    .carry/gb/bin/kiln bench .carry/zoo/$w.json --no-tune --reps 5 > $R/ncu_kiln_$w.txt 2>&1
  timeout 90 ncu --kernel-name regex:triton --launch-skip 2 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    python3 $S/compiled_loop.py $w 5 > $R/ncu_torch_$w.txt 2>&1
  echo "== ncu $w at $(( $(date +%s) - start )) s"
  for f in $R/ncu_kiln_$w.txt $R/ncu_torch_$w.txt; do
    grep -E "DRAM Throughput|Duration|Achieved Occupancy|Registers Per|Block Size|Grid Size|Stall Long|Mem Busy|L1/TEX Hit|L2 Hit" $f | head -12 | tr -s ' ' | tr '\n' ';'; echo
  done
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
echo "done at $(( $(date +%s) - start )) s"
