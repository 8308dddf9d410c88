#!/usr/bin/env bash
# Session 21: the full zoo (shard $SHARD) against torch with kiln $KILN, then `kiln tune` over graphs $TUNE.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
if [[ -n ${SHARD:-} ]]; then
  timeout ${ZBUDGET:-500} python3 bench/zoo.py --kiln ${KILN:-.carry/b21/kiln} --no-tune --shard $SHARD \
    --json $OUT/zoo_${SHARD/\//of}.json > $OUT/zoo_${SHARD/\//of}.txt 2>&1
  echo "zoo rc=$? at $(( $(date +%s) - start )) s"; grep -v "^$" $OUT/zoo_${SHARD/\//of}.txt | tail -40
fi
if [[ -n ${TUNE:-} ]]; then
  python3 bench/zoo.py --write-graphs /tmp/zoo > /dev/null
  mkdir -p $OUT/tune
  for n in $TUNE; do
    [[ $(( $(date +%s) - start )) -gt ${TBUDGET:-560} ]] && { echo "tune budget out before $n"; break; }
    timeout 60 ${KILN:-.carry/b21/kiln} tune /tmp/zoo/$n.json --reps 30 > $OUT/tune/$n.txt 2>&1 || echo "tune FAIL $n"
  done
  tar czf $OUT/tune.tgz -C $OUT tune && rm -rf $OUT/tune
  echo "tune done at $(( $(date +%s) - start )) s"
fi
