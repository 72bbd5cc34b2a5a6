#!/usr/bin/env bash
# Issue 38, top-p alone: the fallback's top-p search with value-spaced passes and the last
# passes over a scratch copy of the range (kernels/sample_logits/triton_top_p_search.py).
# Bench flat-top-p and top-p (both kernels: torch's sort path eager) with the register cap
# on and off, the default shapes at the ceiling, the GPU's sample-logits tests (CUDA graph
# capture) and `check sample-logits --budget standard`. Logs in $OUT/call38h.tgz.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38h
STEP_TAIL=40 bench_top_p top-p 120 --kernel triton-sample-logits --launch fallback_regs=0,128
STEP_TAIL=20 bench_top_p sort-path 60 --kernel torch-sample-logits --calls 5
STEP_TAIL=30 bench bench-sample-logits 60 sample-logits --repeat 2 --calls 30 --ceiling \
  --kernel triton-sample-logits
STEP_TAIL=15 step gpu-tests 150 python3 -m pytest -q -x tests/test_sample_logits_kernels.py
pack
STEP_TAIL=30 step check-sample-logits 240 sampling-harness check sample-logits \
  --budget standard --device cuda --report-dir "$out/check-sample-logits"
pack
