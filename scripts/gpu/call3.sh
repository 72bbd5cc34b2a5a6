#!/usr/bin/env bash
# One device call (DEADLINE seconds, default 540) for issues 39 and 41:
#   1. bench of triton-logits-processors (CUDA graphs, ceiling) at 256x151936x2048:all and
#      32x128256x1024:all, with and without PDL (it compared the designs serial and overlap
#      at ca39e30; `design` was removed with the overlap design);
#   2. `check logits-processors --budget standard` on the default kernel (design serial) and
#      on design overlap (lp_overlap.py, since removed with the design), side by side;
#   3. `mutate` at quick on the Triton kernels in MUTATE_KERNELS (default triton-exact and
#      triton-tree-rejection), N mutants each (default 12), in the time left
#      (scripts/gpu/mutate.sh, its archive $OUT/mutate.tar.gz).
# summary.txt and the archives come back in $OUT.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call3
STEP_TAIL=12
H="python3 -m sampling_harness"
step lp-designs 60 $H bench logits-processors --device cuda --cuda-graph --ceiling --repeat 2 \
  --calls 30 --kernel triton-logits-processors --shape 256x151936x2048:all \
  --shape 32x128256x1024:all --launch pdl=False,True --report-dir "$out/lp-designs"
step lp-standard 190 $H check logits-processors --budget standard --device cuda \
  --kernel triton-logits-processors \
  --report-dir "$out/lp-standard"
{
  echo "commit $(cat COMMIT 2>/dev/null)"
  echo "== lp-designs"; grep -E '^\||^\[|^device' "$out/lp-designs.log"
  echo "== lp-standard"; grep -E "^sampling-harness: |^\[" "$out/lp-standard.log"
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
tar -czf "$OUT/call3.tar.gz" -C /tmp call3
mutate_left ${MUTATE_KERNELS:-triton-exact triton-tree-rejection}
echo "total $(( $(date +%s) - start )) s"
