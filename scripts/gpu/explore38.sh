#!/usr/bin/env bash
# Issue 38, the second device call: triton-logprobs' count and sum-exp forms (masks,
# thread_lse) and programs per SM, with random and top ids; triton-sample-logits' select
# warps and PDL behind _group_max, with group_block 4096 and 8192; Nsight Compute's stall
# samples per SASS line of the select. Every log in one archive ($OUT/explore38.tgz).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh explore38
bench lp 200 logprobs --ceiling --repeat 2 --calls 20 --kernel triton-logprobs \
  --shape 256x151936x21:random --shape 256x151936x21:top --launch masks=False,True \
  --launch thread_lse=False,True --launch programs_per_sm=6,8
bench sl 240 sample-logits --ceiling --repeat 2 --calls 20 --kernel triton-sample-logits \
  --shape 256x151936 \
  --launch select_warps=2,4,8 --launch select_pdl=False,True --launch group_block=4096,8192
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
step ncu-select 90 "$NCU" --clock-control none -k regex:_select_race --launch-skip 2 \
  --launch-count 1 --section WarpStateStats --section SourceCounters \
  --section SchedulerStats -o "$out/select" -f python3 scripts/gpu/diag38_calls.py sample-logits
"$NCU" --import "$out/select.ncu-rep" --page source --csv --print-source sass \
  > "$out/ncu-select-source.csv" 2>&1
"$NCU" --import "$out/select.ncu-rep" --page details > "$out/ncu-select.txt" 2>&1
rm -f "$out"/*.ncu-rep
pack
