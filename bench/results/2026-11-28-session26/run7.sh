#!/usr/bin/env bash
# Session 26 run 7: scripts/gpu-check --bundle, part tests, on the committed build (2d04e74).
mkdir -p .carry/gbx && ln -sfn ../gb/bin .carry/gbx/bin && ln -sfn ../bundle/lib .carry/gbx/lib
export KILN_GPU_CHECK_PARTS=tests KILN_GPU_CHECK_JOBS=8 KILN_GPU_CHECK_OUT=$OUT/gc
timeout 480 scripts/gpu-check --bundle .carry/gbx > $OUT/gpu-check.txt 2>&1; echo "gpu-check rc=$?"
grep -E "tests done|FAILED|failures" $OUT/gpu-check.txt | head -20; tail -25 $OUT/gpu-check.txt
cd $OUT && tar czf gc.tgz gc 2>/dev/null && rm -rf gc
