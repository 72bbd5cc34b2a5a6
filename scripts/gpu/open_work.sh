#!/usr/bin/env bash
# What the open issues still need from a GPU, in one device call (DEADLINE, default 540 s):
#   1. issue 39: `check logits-processors --budget standard` on both designs of the Triton
#      kernel (serial, the default, and overlap: scripts/gpu/lp_overlap.py), with every
#      check finishing (batch_invariance and large_vocab were cut by earlier calls' limits);
#   2. issue 41: `mutate` at quick on the Triton kernels not yet scored on a GPU
#      (triton-inverse-cdf, triton-logits-processors, triton-logprobs, triton-rejection,
#      triton-sample-logits), N mutants each (default 12), in the time left.
# summary.txt and the archives (open-work.tar.gz, mutate.tar.gz, mutate.txt) come back.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
out=/tmp/open-work; rm -rf "$out"; mkdir -p "$out"
start=$(date +%s)
deadline=${DEADLINE:-540}
source scripts/gpu/steps.sh
STEP_TAIL=12
step lp-standard 240 python3 -m sampling_harness check logits-processors --budget standard \
  --device cuda --kernel triton-logits-processors --kernel scripts/gpu/lp_overlap.py:overlap \
  --report-dir "$out/lp-standard"
{
  echo "commit $(cat COMMIT 2>/dev/null)"
  echo "== lp-standard"; grep -E "^sampling-harness: |^\[" "$out/lp-standard.log"
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
tar -czf "$OUT/open-work.tar.gz" -C /tmp open-work
left=$(( deadline - ($(date +%s) - start) - 15 ))
if [ "$left" -gt 60 ]; then
  KERNELS="${MUTATE_KERNELS:-triton-inverse-cdf triton-logits-processors triton-logprobs triton-rejection triton-sample-logits}" \
    N=${N:-12} DEADLINE=$left NO_INSTALL=1 bash scripts/gpu/mutate.sh
fi
echo "total $(( $(date +%s) - start )) s"
