#!/usr/bin/env bash
# Issue 38, the third session's closing call, on the final kernels: `check all --budget
# standard`, the GPU's sample-logits unit tests (the CUDA-graph capture with the top-p
# scratch, the split and read-ahead fallbacks, top-p alone three ways), and the top-p bench.
# Logs in $OUT/call38n.tgz.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38n
STEP_TAIL=30 step check-all 420 sampling-harness check all --budget standard --device cuda \
  --report-dir "$out/check-all"
pack
STEP_TAIL=20 bench_top_p top-p 60 --kernel triton-sample-logits
STEP_TAIL=15 step gpu-tests 100 python3 -m pytest -q tests/test_sample_logits_kernels.py \
  -k "cuda_graph or split or tiles_ahead or top_p_alone"
pack
