#!/usr/bin/env bash
# Issue 38, top-p alone, after call38h's out-of-memory (scratch for every row of the
# checks' large batches): the top-p scratch held for at most COPY_ROWS rows. `check
# sample-logits --budget standard`, then the top-p bench (torch's sort path eager beside),
# then the issue's tables in one run (--cuda-graph --ceiling, 2 repeats of 30 calls).
# Logs in $OUT/call38m.tgz.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38m
STEP_TAIL=12 step check-sample-logits 220 sampling-harness check sample-logits \
  --budget standard --device cuda --report-dir "$out/check-sample-logits"
pack
STEP_TAIL=20 bench top-p 90 sample-logits --repeat 2 --calls 10 \
  --shape 256x151936:flat-top-p --shape 256x151936:top-p
pack
STEP_TAIL=40 bench bench-sample 45 sample --repeat 2 --calls 30 --ceiling
STEP_TAIL=40 bench bench-logprobs 60 logprobs --repeat 2 --calls 30 --ceiling \
  --shape 256x151936x21:top --shape 256x151936x21:random --shape 32x128256x21:random \
  --shape 1x32000x21:random
STEP_TAIL=40 bench bench-sample-logits 60 sample-logits --repeat 2 --calls 30 --ceiling
STEP_TAIL=40 bench bench-rejection 60 rejection --repeat 2 --calls 30 --ceiling \
  --shape 256x4x151936 --shape 32x4x128256 --shape 1x4x32000
pack
