#!/usr/bin/env bash
# Issue 38, the sixth device call: top-p alone through the whole-row fallback, its search
# passes reading 1, 2 or 4 tiles at once (fallback_unroll) with 4 or 8 warps, against the
# sort path (torch-sample-logits); the default at 256x151936; then `check sample-logits`
# at standard on the GPU. Logs in one archive ($OUT/call38f.tgz).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38f
bench top-p 200 sample-logits --repeat 2 --calls 10 --kernel triton-sample-logits \
  --shape 256x151936:flat-top-p --shape 256x151936:top-p \
  --launch fallback_unroll=1,2,4 --launch fallback_warps=4,8
bench sl 60 sample-logits --ceiling --repeat 2 --calls 20 --kernel triton-sample-logits \
  --shape 256x151936 --shape 256x151936:plain
step check 200 sampling-harness check sample-logits --budget standard --device cuda \
  --report-dir "$out/check"
pack
