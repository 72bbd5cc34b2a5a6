#!/usr/bin/env bash
# Issue 38: top-p alone through the fallback, its search tile (256, 512, 1024 columns)
# against the tiles read at once (4, 8) with 8 warps: fewer live registers, fewer spills?
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38j
git log -1 --format='commit %h %s' 2>/dev/null || true
STEP_TAIL=30 step top-p 200 python3 -m sampling_harness bench sample-logits --device cuda \
  --cuda-graph --repeat 2 --calls 10 --report-dir "$out/top-p" --kernel triton-sample-logits \
  --shape 256x151936:flat-top-p --shape 256x151936:top-p \
  --launch fallback_search=256,512,1024 --launch fallback_unroll=4,8
tar -czf "$OUT/call38j.tgz" -C /tmp call38j
