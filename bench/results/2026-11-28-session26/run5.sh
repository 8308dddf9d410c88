#!/usr/bin/env bash
# Session 26 run 5: the committed build: the full zoo (heuristic defaults) with the same-size copy, GPU tests.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s); B=.carry/b26
mkdir -p $OUT/r
timeout 300 python3 bench/zoo.py --kiln $B/kiln --no-tune --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; tail -1 $OUT/r/zoo.txt
$B/kiln bench examples/layernorm.json --no-tune --flush-l2 --reps 30 > $OUT/r/bench_layernorm.txt 2>&1; echo "bench rc=$?"; tail -4 $OUT/r/bench_layernorm.txt
for t in runtime_executable_gpu_test runtime_launch_gpu_test; do timeout 60 $B/$t > $OUT/r/$t.txt 2>&1; echo "$t rc=$?"; tail -1 $OUT/r/$t.txt; done
timeout 60 $B/kiln tune .carry/zoo/softmax_axis1_16MiB_f32.json --reps 10 > $OUT/r/tune_softmax_axis1.txt 2>&1; echo "tune rc=$?"; tail -2 $OUT/r/tune_softmax_axis1.txt | cut -c 1-300
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
