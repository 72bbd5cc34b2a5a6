#!/usr/bin/env bash
# One device call (issue 39, DEADLINE default 560 s): triton-logits-processors with the
# sparse kernel a programmatic dependent of the dense one and its bias and stop ids read
# before the sort. Exact equality of pdl=True with pdl=False at every history bucket
# (lp_pdl_equal.py), the probe's timings, the bench at its defaults, `check
# logits-processors --budget standard`, then `mutate` at quick (12 mutants) in what is left.
set -u
cd "$(dirname "$0")/../.."
DEADLINE=${DEADLINE:-560}
source scripts/gpu/steps.sh part
STEP_TAIL=40
step pdl-equal 120 python3 scripts/gpu/lp_pdl_equal.py "pdl=True"
step pdl-probe 60 python3 scripts/gpu/lp_pdl_probe.py "pdl=False" "pdl=True" \
  "pdl=True sparse_regs=48"
step lp-bench 100 python3 -m sampling_harness bench logits-processors --device cuda \
  --cuda-graph --ceiling --repeat 3 --calls 30 --kernel triton-logits-processors
step lp-standard 150 python3 -m sampling_harness check logits-processors \
  --budget standard --device cuda --kernel triton-logits-processors \
  --report-dir "$out/lp-standard"
tar -czf "$OUT/part.tar.gz" -C /tmp part
mutate_left triton-logits-processors
echo "total $(( $(date +%s) - start )) s"
