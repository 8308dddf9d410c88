#!/usr/bin/env bash
# Session 28 run 3: kiln tune with the one-row-per-block streamed candidates; the zoo (kiln only, heuristic launches) with the small column blocks in the fit.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export KILN_CACHE_DIR=/tmp/kc
start=$(date +%s); B=.carry/b28; Z=.carry/zoo
mkdir -p $OUT/r
for g in softmax_vocab151936_bf16 log_softmax_vocab128256_bf16 softmax_vocab50257_f16 softmax_vocab32000_bf16; do
  echo "== $g" >> $OUT/r/tune.txt
  timeout 70 $B/kiln tune $Z/$g.json --reps 15 >> $OUT/r/tune.txt 2>&1; echo "rc=$?" >> $OUT/r/tune.txt
done
echo "tune done at $(( $(date +%s) - start )) s"; cat $OUT/r/tune.txt | tr '|' '\n' | grep -E "==|<-|default|split=1 " 
rm -rf /tmp/kc
timeout 300 python3 bench/zoo.py --kiln $B/kiln --no-tune --kiln-only --json $OUT/r/zoo.json > $OUT/r/zoo.txt 2>&1
echo "zoo rc=$? at $(( $(date +%s) - start )) s"; tail -1 $OUT/r/zoo.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
