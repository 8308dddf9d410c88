#!/usr/bin/env bash
# Session 29 run 5: the norm fold priced with its phases (kPhasesUs, kCentreUs): the linear GPU
# tests (every fold forced), bench/norm_linear.py on a 1024 x 1024 weight at 1, 8 and 16 rows,
# and bench/models.py transformer_block at 2048 and 16 tokens.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s)
mkdir -p $OUT/r
timeout 120 .carry/gb/bin/runtime_linear_gpu_test > $OUT/r/linear_gpu_test.txt 2>&1
echo "linear gpu test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  |output 0" $OUT/r/linear_gpu_test.txt | tail -40
timeout 150 python3 bench/norm_linear.py --only rms,layer --m 1,8,16 --k 1024 --n 1024 --reps 50 --json $OUT/r/nl_1024x1024.json > $OUT/r/nl_1024x1024.txt 2>&1
echo "norm_linear rc=$? at $(( $(date +%s) - start )) s"; grep -v Warning $OUT/r/nl_1024x1024.txt | tail -8
timeout 200 python3 bench/models.py --models transformer_block --modes eager,default,reduce-overhead --json $OUT/r/models_tb.json > $OUT/r/models_tb.txt 2>&1
echo "models rc=$? at $(( $(date +%s) - start )) s"; grep -v "^\[" $OUT/r/models_tb.txt | grep -v Warn | tail -4
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
