#!/usr/bin/env bash
# Issue 38, the fifth device call, at the new sample-logits defaults (groups of at most
# 1536 a row, group_block 4096, the select behind PDL and reading a step ahead): the last
# settings around them at 256x151936 (group_block 2048/4096, _group_max's warps 4/8, the
# select's tile 2048/4096/8192); `check sample-logits` and `check logprobs` at standard on
# the GPU (both kernels' code changed); `mutate` at quick of both in what is left. Logs in
# one archive ($OUT/call38e.tgz) beside mutate's own.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38e
bench sl 150 sample-logits --ceiling --repeat 2 --calls 20 --kernel triton-sample-logits \
  --shape 256x151936 \
  --launch group_block=2048,4096 --launch warps=4,8 --launch select_tile=2048,4096,8192
for family in sample-logits logprobs; do
  step "check-$family" 170 sampling-harness check "$family" --budget standard --device cuda \
    --report-dir "$out/check-$family"
done
pack
N=8 mutate_left triton-sample-logits triton-logprobs
