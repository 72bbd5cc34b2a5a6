#!/usr/bin/env bash
# Issue 38: top-p alone after the fallback's tiles took the shape of the search's sums
# ([R, 1, W]: no layout moves through shared memory): reading 4 or 8 search tiles at once
# with 8 or 16 warps; the fallback's SASS opcode counts (barriers, spills); then `check
# sample-logits` at standard on the GPU. One archive ($OUT/call38i.tgz).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38i
STEP_TAIL=30 bench top-p 150 sample-logits --repeat 2 --calls 10 \
  --kernel triton-sample-logits --shape 256x151936:flat-top-p --shape 256x151936:top-p \
  --launch fallback_unroll=4,8 --launch fallback_warps=8,16
step sass 60 python3 benchmarks/sass_histogram.py _fallback_race
step check 200 sampling-harness check sample-logits --budget standard --device cuda \
  --report-dir "$out/check"
pack
