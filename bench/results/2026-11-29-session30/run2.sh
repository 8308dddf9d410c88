#!/usr/bin/env bash
# Session 30 run 2: the final build (few short rows cache their weights; ExpShifted reverted):
# the linear GPU tests; bench/norm_linear.py (kiln unfused and folded, torch eager and
# torch.compile, CUDA graphs) on 1024 x 1024 and 4096 x 4096 weights at decoding sizes; and
# bench/models.py transformer_block at 2048 and 16 tokens.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so
export TORCHINDUCTOR_COMPILE_THREADS=16
[ -e .carry/bundle/lib/libkiln.so.0.1 ] || ln -s libkiln.so .carry/bundle/lib/libkiln.so.0.1
start=$(date +%s)
mkdir -p $OUT/r
timeout 100 .carry/gb/bin/runtime_linear_gpu_test > $OUT/r/linear_gpu_test.txt 2>&1
echo "linear gpu test rc=$? at $(( $(date +%s) - start )) s"; grep -E "^\[  (PASSED|FAILED)" $OUT/r/linear_gpu_test.txt
timeout 150 python3 bench/norm_linear.py --only rms,layer --m 1,8,16 --k 1024 --n 1024 --reps 50 --json $OUT/r/nl_1024.json > $OUT/r/nl_1024.txt 2>&1
echo "norm_linear 1024 rc=$? at $(( $(date +%s) - start )) s"; grep -v Warning $OUT/r/nl_1024.txt | tail -9
timeout 150 python3 bench/norm_linear.py --only rms,layer --m 1,16,64 --k 4096 --n 4096 --reps 50 --json $OUT/r/nl_4096.json > $OUT/r/nl_4096.txt 2>&1
echo "norm_linear 4096 rc=$? at $(( $(date +%s) - start )) s"; grep -v Warning $OUT/r/nl_4096.txt | tail -9
timeout 180 python3 bench/models.py --models transformer_block --modes eager,default,reduce-overhead --json $OUT/r/models_tb.json > $OUT/r/models_tb.txt 2>&1
echo "models rc=$? at $(( $(date +%s) - start )) s"; grep -v "^\[" $OUT/r/models_tb.txt | grep -v Warn | tail -5
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
