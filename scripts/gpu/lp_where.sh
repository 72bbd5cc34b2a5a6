#!/usr/bin/env bash
# One device call (issue 39): where the sparse kernel of triton-logits-processors spends
# its time as it ships (scripts/gpu/lp_sparse_probe.py: base, the sort, the run counts'
# work space, the bitmask gathers, the bias and stop ids left out; 32 warps), and the dense
# kernel's tile swept at the target shape.
set -u
cd "$(dirname "$0")/../.."
DEADLINE=${DEADLINE:-400}
source scripts/gpu/steps.sh part
for v in base no-sort no-runs penalties-only warps=32; do
  step "probe-$v" 60 python3 scripts/gpu/lp_sparse_probe.py "$v"
done
step dense-tiles 120 python3 -m sampling_harness bench logits-processors --device cuda \
  --cuda-graph --repeat 3 --calls 30 --kernel triton-logits-processors \
  --shape 256x151936x2048:all --launch block=4096,8192 --launch warps=8,16
echo "total $(( $(date +%s) - start )) s"
