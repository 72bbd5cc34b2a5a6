#!/usr/bin/env bash
# Issue 38, the third device call: triton-logprobs under a register cap (maxnreg) with
# more programs per SM (the unpruned loop was 69 % issue-busy at 6.4 warps an SM, 253
# registers a thread), the sum-exp per element or per thread; triton-sample-logits' gather
# read a step ahead (select_prefetch) and wider steps (select_tile), behind PDL with
# group_block 4096. Every log in one archive ($OUT/explore38b.tgz).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh explore38b
bench lp 260 logprobs --ceiling --repeat 2 --calls 20 --kernel triton-logprobs \
  --shape 256x151936x21:random --launch maxnreg=None,168,128 \
  --launch programs_per_sm=6,11,15 --launch thread_lse=False,True
bench lp-top 90 logprobs --ceiling --repeat 2 --calls 20 --kernel triton-logprobs \
  --shape 256x151936x21:top \
  --launch maxnreg=None,168,128 --launch programs_per_sm=6,11,15
bench sl 150 sample-logits --ceiling --repeat 2 --calls 20 --kernel triton-sample-logits \
  --shape 256x151936 \
  --launch select_prefetch=False,True --launch select_tile=4096,8192 --launch select_pdl=True \
  --launch group_block=4096
pack
