#!/usr/bin/env bash
# Session 29 run 4: the norm fold after its centring loads were unrolled: bench/norm_linear.py
# for rms and layer at decoding sizes (K 4096 -> 4096 and 14336; K 1024 -> 3072, the
# transformer_block's LN -> QKV at 16 tokens), and bench/models.py transformer_block at 2048
# and 16 tokens (its LNs now fold where the model prices it).
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s)
mkdir -p $OUT/r
timeout 200 python3 bench/norm_linear.py --only rms,layer --m 1,16 --reps 50 --json $OUT/r/nl_4096.json > $OUT/r/nl_4096.txt 2>&1
echo "norm_linear 4096 rc=$? at $(( $(date +%s) - start )) s"; grep -v Warning $OUT/r/nl_4096.txt | tail -10
timeout 120 python3 bench/norm_linear.py --only rms,layer --m 1,16 --k 1024 --n 3072 --reps 50 --json $OUT/r/nl_1024.json > $OUT/r/nl_1024.txt 2>&1
echo "norm_linear 1024 rc=$? at $(( $(date +%s) - start )) s"; grep -v Warning $OUT/r/nl_1024.txt | tail -6
timeout 200 python3 bench/models.py --models transformer_block --modes eager,default,reduce-overhead --json $OUT/r/models_tb.json > $OUT/r/models_tb.txt 2>&1
echo "models rc=$? at $(( $(date +%s) - start )) s"; grep -v "^\[" $OUT/r/models_tb.txt | grep -v Warn | tail -5
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
