#!/usr/bin/env bash
# Issue 38, the fourth device call: triton-sample-logits with 2048 groups a row (128
# columns a group at V = 151936: half the gather) against 1024, group_block 4096 and 8192,
# the select behind PDL and reading a step ahead, at the bench's shapes; then the host's
# time in one eager call of each Triton kernel, by function (benchmarks/host_cost.py
# --profile). Every log in one archive ($OUT/explore38c.tgz).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh explore38c
bench sl 300 sample-logits --ceiling --repeat 2 --calls 20 --kernel triton-sample-logits \
  --shape 256x151936 --shape 256x151936:greedy --shape 32x128256 --shape 1x32000 \
  --launch groups=1024,2048 --launch group_block=4096,8192 --launch select_pdl=True \
  --launch select_prefetch=True
STEP_TAIL=120 step host 120 python3 benchmarks/host_cost.py --shapes 256x151936 --profile
pack
