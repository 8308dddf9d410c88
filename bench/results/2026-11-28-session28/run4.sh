#!/usr/bin/env bash
# Session 28 run 4: scripts/gpu-check (tests) on the committed build; bench/models.py at the fixture sizes.
export LD_LIBRARY_PATH=$PWD/.carry/bundle/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/bench KILN_SOURCE_DIR=$PWD KILN_LIBRARY=$PWD/.carry/bundle/lib/libkiln.so
export TORCHINDUCTOR_COMPILE_THREADS=16
start=$(date +%s)
mkdir -p $OUT/r
KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 timeout 330 scripts/gpu-check --bundle .carry/gbx > $OUT/r/gpu_check.txt 2>&1
echo "gpu-check rc=$? at $(( $(date +%s) - start )) s"; grep -E "passed|failed|FAILED|cases" $OUT/r/gpu_check.txt | tail -8
timeout 230 python3 bench/models.py --models gpt2_sdpa,gpt2_manual,gpt2_tanh,gpt2_dropout,gpt2_attn_dropout,llama,ce_head --sizes fixture --dtypes bf16,f32 --modes eager,default,reduce-overhead --json $OUT/r/models_fixture.json > $OUT/r/models_fixture.txt 2>&1
echo "models rc=$? at $(( $(date +%s) - start )) s"; tail -22 $OUT/r/models_fixture.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
echo "done at $(( $(date +%s) - start )) s"
