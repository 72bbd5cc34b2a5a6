#!/usr/bin/env bash
# Issue 38, the closing device call: top-p alone through the fallback reading 4 or 8 search
# tiles at once (its first probes now placed by value); the issue's bench tables at the
# defaults, one run (--cuda-graph --ceiling, 2 repeats of 30 calls); then `check all
# --budget standard` on the GPU. Logs in one archive ($OUT/call38g.tgz).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38g
STEP_TAIL=40 bench top-p 90 sample-logits --repeat 2 --calls 10 \
  --kernel triton-sample-logits --shape 256x151936:flat-top-p --shape 256x151936:top-p \
  --launch fallback_unroll=4,8
STEP_TAIL=40 bench bench-sample 45 sample --repeat 2 --calls 30 --ceiling
STEP_TAIL=40 bench bench-logprobs 60 logprobs --repeat 2 --calls 30 --ceiling \
  --shape 256x151936x21:top --shape 256x151936x21:random --shape 32x128256x21:random \
  --shape 1x32000x21:random
STEP_TAIL=40 bench bench-sample-logits 60 sample-logits --repeat 2 --calls 30 --ceiling
STEP_TAIL=40 bench bench-rejection 60 rejection --repeat 2 --calls 30 --ceiling \
  --shape 256x4x151936 --shape 32x4x128256 --shape 1x4x32000
pack
STEP_TAIL=30 step check-all 560 sampling-harness check all --budget standard --device cuda \
  --report-dir "$out/check-all"
pack
