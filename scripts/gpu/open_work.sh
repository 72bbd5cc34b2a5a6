#!/usr/bin/env bash
# What the open issues still need from a GPU, in one device call (DEADLINE, default 540 s):
#   0. issue 39: where the sparse kernel's time goes (scripts/gpu/lp_sparse_probe.py, one
#      variant a process);
#   1. issue 39: `check logits-processors --budget standard` on the Triton kernel (run at
#      ec91237 on two designs; the second, overlap, since removed), with every
#      check finishing (batch_invariance and large_vocab were cut by earlier calls' limits);
#   1b. the float32 noise floor caught at quick on a GPU (its tail's scale 1e-8: gpu_budget);
#   2. issue 41: `mutate` at quick on the Triton kernels not yet scored on a GPU
#      (triton-inverse-cdf, triton-logits-processors, triton-logprobs, triton-rejection,
#      triton-sample-logits), N mutants each (default 12), in the time left.
# summary.txt and the archives (open-work.tar.gz, mutate.tar.gz, mutate.txt) come back.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh open-work
STEP_TAIL=12
step lp-probe 120 bash -c 'for variant in base warps=4 warps=16 warps=32 tl-sort no-sort \
  penalties-only; do timeout 40 python3 scripts/gpu/lp_sparse_probe.py "$variant" 2>&1 \
  | grep -v "^USDT" | tail -5; done'
step lp-standard 270 python3 -m sampling_harness check logits-processors --budget standard \
  --device cuda --kernel triton-logits-processors \
  --report-dir "$out/lp-standard"
step noise-floor-quick 60 python3 -m sampling_harness selftest sample --device cuda \
  --kernel fp32-noise-floor --report-dir "$out/noise-floor-quick"
{
  echo "commit $(cat COMMIT 2>/dev/null)"
  echo "== lp-probe"; cat "$out/lp-probe.log"
  echo "== lp-standard"; grep -E "^sampling-harness: |^\[" "$out/lp-standard.log"
  echo "== noise-floor-quick"; grep -E "^\|" "$out/noise-floor-quick.log"
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
tar -czf "$OUT/open-work.tar.gz" -C /tmp open-work
mutate_left ${MUTATE_KERNELS:-triton-inverse-cdf}
echo "total $(( $(date +%s) - start )) s"
