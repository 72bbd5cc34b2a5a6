#!/usr/bin/env bash
# Issue 38: triton-logprobs with random ids, smaller loop bodies (BLOCK 256: 8 entries a
# thread, half the unpruned loop's 848 instructions, whose fetches stalled 10 % of samples)
# and pipeline depths, at the bench's batch; top ids beside.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38k
STEP_TAIL=30 bench lp 200 logprobs --ceiling --repeat 2 --calls 20 --kernel triton-logprobs \
  --shape 256x151936x21:random --shape 256x151936x21:top --launch block=256,512 \
  --launch stages=2,3,4
pack
