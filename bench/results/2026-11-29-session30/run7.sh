#!/usr/bin/env bash
# Session 30 run 7: few short rows take a block of one vector per thread (rows of more than 32
# vectors). gpu-check (tests); the norms alone (kiln bench --cuda-graph, as run 1 timed the
# two binaries before: the carry limit leaves no room for the old one) and against
# torch.compile (run9.py); norm + Linear on 1024 x 1024.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so KILN_CACHE_DIR=/tmp/kc
export TORCHINDUCTOR_COMPILE_THREADS=16
R=bench/results/2026-11-29-session30
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
[ -e .carry/gbx/bin ] || { mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib; }
start=$(date +%s)
mkdir -p $OUT/r
KILN_GPU_CHECK_OUT=$OUT/r/gpu-check KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 270 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "cases|failed" $OUT/r/gpu_check.txt | grep -v " 0 failed" | tail -5
for g in rms_1x1024 rms_16x1024 rms_64x1024 rms_512x1024 layer_1x1024 layer_16x1024 layer_64x1024 layer_512x1024; do
  for b in new; do
    bin=.carry/gb/bin/kiln
    $bin bench $R/$g.json --no-tune --cuda-graph --reps 200 --device h200 > $OUT/r/norm_${g}_$b.txt 2>&1
    echo "$g $b $(grep -E 'cuda graph' $OUT/r/norm_${g}_$b.txt | head -1)"
  done
done
echo "norms at $(( $(date +%s) - start )) s"
timeout 60 python3 $R/../2026-11-29-session29/run9.py > $OUT/r/run9_again.txt 2>&1; tail -5 $OUT/r/run9_again.txt
timeout 60 python3 bench/norm_linear.py --only rms,layer --m 1,8,16 --k 1024 --n 1024 --reps 50 --no-tune --json $OUT/r/nl_1024.json > $OUT/r/nl_1024.txt 2>&1
echo "norm_linear rc=$? at $(( $(date +%s) - start )) s"; grep -v Warning $OUT/r/nl_1024.txt | tail -7
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
