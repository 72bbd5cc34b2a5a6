#!/usr/bin/env bash
# One device call (DEADLINE, default 560 s): issue 41's last two GPU runs (triton-inverse-cdf
# at standard after its scan change; the two new sample mutants), then issue 39's sparse
# kernel as a programmatic dependent of the dense one (PDL): exact equality with the plain
# launch (scripts/gpu/lp_pdl_equal.py), and the bench with and without PDL at the target
# shape (at 1ae28f1 it also swept dense_per_sm and sparse_rows, since removed, each
# --launch key given on its own). summary: stdout; logs in part.tar.gz.
set -u
cd "$(dirname "$0")/../.."
DEADLINE=${DEADLINE:-560}
source scripts/gpu/steps.sh part
STEP_TAIL=40
step inverse-cdf-standard 200 python3 -m sampling_harness check sample \
  --kernel triton-inverse-cdf --budget standard --device cuda --report-dir "$out/icdf"
step sample-mutants 120 python3 -m sampling_harness selftest sample --device cuda \
  --kernel chunked-fp32-noise --kernel aligned-width-fails --report-dir "$out/selftest"
step pdl-equal 60 python3 scripts/gpu/lp_pdl_equal.py "pdl=True"
step lp-pdl-bench 160 python3 -m sampling_harness bench logits-processors --device cuda \
  --cuda-graph --ceiling --repeat 3 --calls 30 --kernel triton-logits-processors \
  --shape 256x151936x2048:all --launch pdl=False,True
tar -czf "$OUT/part.tar.gz" -C /tmp part
echo "total $(( $(date +%s) - start )) s"
