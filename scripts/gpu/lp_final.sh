#!/usr/bin/env bash
# One device call (DEADLINE default 300 s): triton-logits-processors after the review of its
# launcher: `check logits-processors --budget standard` on a fresh machine, then its bench
# at the defaults.
set -u
cd "$(dirname "$0")/../.."
DEADLINE=${DEADLINE:-300}
source scripts/gpu/steps.sh part
STEP_TAIL=30
step lp-standard 200 python3 -m sampling_harness check logits-processors --budget standard \
  --device cuda --report-dir "$out/lp-standard"
step lp-bench 90 python3 -m sampling_harness bench logits-processors --device cuda \
  --cuda-graph --ceiling --repeat 3 --calls 30 --kernel triton-logits-processors
echo "total $(( $(date +%s) - start )) s"
