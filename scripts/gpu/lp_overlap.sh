#!/usr/bin/env bash
# One device call (issue 39): the sparse kernel beside the dense one. Exact equality of the
# PDL launches with the plain one (lp_pdl_equal.py), then lp_pdl_probe.py over persistent
# dense launches narrow enough to leave an SM's registers to the sparse programs, then
# `check logits-processors --budget quick` on the kernel as it ships (the bias and stop ids'
# first slots now read before the first store).
set -u
cd "$(dirname "$0")/../.."
DEADLINE=${DEADLINE:-400}
source scripts/gpu/steps.sh part
STEP_TAIL=60
step pdl-equal 90 python3 scripts/gpu/lp_pdl_equal.py "pdl=True" \
  "pdl=True block=2048 dense_per_sm=2 sparse_regs=40" "pdl=True block=2048 dense_per_sm=2 sparse_rows=2"
step pdl-probe 150 python3 scripts/gpu/lp_pdl_probe.py "pdl=False" "pdl=True" \
  "pdl=True block=2048 dense_per_sm=2 sparse_regs=40" \
  "pdl=True block=2048 dense_per_sm=1 sparse_regs=48" \
  "pdl=True block=2048 dense_per_sm=2 sparse_rows=2" \
  "pdl=True block=2048 dense_per_sm=2" \
  "pdl=True block=1024 warps=4 dense_per_sm=4 sparse_regs=40" \
  "pdl=True block=4096 dense_per_sm=1 sparse_regs=40" \
  "pdl=True block=2048 dense_per_sm=3 sparse_regs=40" \
  "pdl=False block=2048 dense_per_sm=2" "pdl=False block=2048 dense_per_sm=4"
step lp-quick 120 python3 -m sampling_harness check logits-processors --budget quick \
  --device cuda --kernel triton-logits-processors --report-dir "$out/lp-quick"
tar -czf "$OUT/part.tar.gz" -C /tmp part
echo "total $(( $(date +%s) - start )) s"
