#!/usr/bin/env bash
# One device call (issue 38, DEADLINE default 560 s): triton-sample-logits with the
# select's search of several probes a round (nth_largest): the tail probe, the bench at
# its defaults, `check sample-logits --budget standard` on the Triton kernel, then `mutate`
# at quick (12 mutants) in what is left.
set -u
cd "$(dirname "$0")/../.."
DEADLINE=${DEADLINE:-560}
source scripts/gpu/steps.sh part
STEP_TAIL=30
step sl-tail 60 python3 scripts/gpu/sl_tail_probe.py 256x151936 256x151936:greedy 32x128256
step sl-bench 120 python3 -m sampling_harness bench sample-logits --device cuda \
  --cuda-graph --ceiling --repeat 3 --calls 30 --kernel triton-sample-logits \
  --shape 256x151936 --shape 256x151936:greedy --shape 32x128256
step sl-standard 200 python3 -m sampling_harness check sample-logits --budget standard \
  --device cuda --kernel triton-sample-logits --report-dir "$out/sl-standard"
tar -czf "$OUT/part.tar.gz" -C /tmp part
left=$(( deadline - ($(date +%s) - start) - 15 ))
[ "$left" -gt 90 ] && KERNELS=triton-sample-logits N=12 DEADLINE=$left NO_INSTALL=1 \
  bash scripts/gpu/mutate.sh
echo "total $(( $(date +%s) - start )) s"
