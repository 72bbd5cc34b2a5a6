#!/usr/bin/env bash
# The GPU runs that close issues 39 and 41, in two device calls (PART=1, PART=2; DEADLINE,
# default 540 s):
#   PART=1  issue 39: the sparse kernel's warps of triton-logits-processors at
#           the bench's target shape (graph replay, % of ceiling); issue 41: `mutate` at
#           quick on triton-rejection and triton-sample-logits (12 mutants each, the seed of
#           the earlier tables), after the tails' short rows at 1e-8 (suites/rare_wins.py).
#   PART=2  issue 41: `mutate` at quick on triton-rejection (again: the short rows) and
#           triton-logits-processors.
#   PART=3  `check all --budget quick` (the new tail entries on every kernel, one
#           family-wise alpha); issue 39: `check logits-processors --budget standard` on
#           the Triton kernel as it ships, its bench at the defaults, and `mutate` on it
#           again (the overlap design's code, dead to the checks, removed).
#   PART=4  issue 39: the sparse kernel's register cap (sparse_regs) swept at the target
#           shape, the bench at the defaults, `check logits-processors --budget standard`
#           and `mutate` on the Triton kernel as it ships.
# summary.txt and the archives (part.tar.gz, mutate.tar.gz, mutate.txt) come back.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh part
STEP_TAIL=30
if [ "${PART:-1}" = 1 ]; then
  step lp-bench 170 python3 -m sampling_harness bench logits-processors --device cuda \
    --cuda-graph --ceiling --repeat 3 --calls 30 --kernel triton-logits-processors \
    --shape 256x151936x2048:all --launch sparse_warps=8,16,32
  tar -czf "$OUT/part.tar.gz" -C /tmp part
  mutate_left triton-rejection triton-sample-logits
elif [ "$PART" = 4 ]; then
  step lp-regs 120 python3 -m sampling_harness bench logits-processors --device cuda \
    --cuda-graph --ceiling --repeat 3 --calls 30 --kernel triton-logits-processors \
    --shape 256x151936x2048:all --launch sparse_regs=0,48,56,64,80
  step lp-bench 100 python3 -m sampling_harness bench logits-processors --device cuda \
    --cuda-graph --ceiling --repeat 3 --calls 30 --kernel triton-logits-processors
  step lp-standard 150 python3 -m sampling_harness check logits-processors \
    --budget standard --device cuda --kernel triton-logits-processors \
    --report-dir "$out/lp-standard"
  tar -czf "$OUT/part.tar.gz" -C /tmp part
  mutate_left triton-logits-processors
elif [ "$PART" = 2 ]; then
  mutate_left triton-rejection triton-logits-processors
else
  step check-all-quick 200 python3 -m sampling_harness check all --budget quick \
    --device cuda --report-dir "$out/check-all-quick"
  step lp-standard 150 python3 -m sampling_harness check logits-processors \
    --budget standard --device cuda --kernel triton-logits-processors \
    --report-dir "$out/lp-standard"
  step lp-bench 100 python3 -m sampling_harness bench logits-processors --device cuda \
    --cuda-graph --ceiling --repeat 3 --calls 30 --kernel triton-logits-processors
  tar -czf "$OUT/part.tar.gz" -C /tmp part
  mutate_left triton-logits-processors
fi
echo "total $(( $(date +%s) - start )) s"
