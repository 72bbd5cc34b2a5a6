#!/usr/bin/env bash
# One device call (DEADLINE default 560 s): triton-logits-processors as it ships, PDL taken
# on long dense grids only (long_dense_grid): its bench at the defaults (both shapes),
# `check logits-processors --budget standard`, then `check all --budget quick`.
set -u
cd "$(dirname "$0")/../.."
DEADLINE=${DEADLINE:-560}
source scripts/gpu/steps.sh part
STEP_TAIL=30
step lp-bench 100 python3 -m sampling_harness bench logits-processors --device cuda \
  --cuda-graph --ceiling --repeat 3 --calls 30 --kernel triton-logits-processors
step lp-standard 150 python3 -m sampling_harness check logits-processors \
  --budget standard --device cuda --kernel triton-logits-processors \
  --report-dir "$out/lp-standard"
step check-all-quick 250 python3 -m sampling_harness check all --budget quick \
  --device cuda --report-dir "$out/check-all-quick"
tar -czf "$OUT/part.tar.gz" -C /tmp part
echo "total $(( $(date +%s) - start )) s"
