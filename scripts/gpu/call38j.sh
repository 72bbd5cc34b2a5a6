#!/usr/bin/env bash
# Issue 38: top-p alone through the fallback, its search tile (256, 512, 1024 columns)
# against the tiles read at once (4, 8) with 8 warps: fewer live registers, fewer spills?
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38j
STEP_TAIL=30 bench top-p 200 sample-logits --repeat 2 --calls 10 \
  --kernel triton-sample-logits --shape 256x151936:flat-top-p --shape 256x151936:top-p \
  --launch fallback_search=256,512,1024 --launch fallback_unroll=4,8
pack
