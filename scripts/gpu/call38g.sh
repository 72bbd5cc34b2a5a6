#!/usr/bin/env bash
# Issue 38, the closing device call: top-p alone through the fallback reading 4 or 8 search
# tiles at once (its first probes now placed by value); the issue's bench tables at the
# defaults, one run (--cuda-graph --ceiling, 2 repeats of 30 calls); then `check all
# --budget standard` on the GPU. Logs in one archive ($OUT/call38g.tgz).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38g
git log -1 --format='commit %h %s' 2>/dev/null || true
bench() {  # NAME MAX FAMILY ARGS...
  local name=$1 most=$2 family=$3; shift 3
  STEP_TAIL=40 step "$name" "$most" python3 -m sampling_harness bench "$family" --device cuda \
    --cuda-graph --repeat 2 --report-dir "$out/$name" "$@"
}
bench top-p 90 sample-logits --calls 10 --kernel triton-sample-logits \
  --shape 256x151936:flat-top-p --shape 256x151936:top-p --launch fallback_unroll=4,8
bench bench-sample 45 sample --calls 30 --ceiling
bench bench-logprobs 60 logprobs --calls 30 --ceiling --shape 256x151936x21:top \
  --shape 256x151936x21:random --shape 32x128256x21:random --shape 1x32000x21:random
bench bench-sample-logits 60 sample-logits --calls 30 --ceiling
bench bench-rejection 60 rejection --calls 30 --ceiling --shape 256x4x151936 \
  --shape 32x4x128256 --shape 1x4x32000
tar -czf "$OUT/call38g.tgz" -C /tmp call38g
STEP_TAIL=30 step check-all 560 sampling-harness check all --budget standard --device cuda \
  --report-dir "$out/check-all"
tar -czf "$OUT/call38g.tgz" -C /tmp call38g
