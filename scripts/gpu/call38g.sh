#!/usr/bin/env bash
# Issue 38, the closing device call: top-p alone through the fallback reading 4 or 8 search
# tiles at once (its first probes now placed by value); the issue's bench tables at the
# defaults, one run (--cuda-graph --ceiling, 2 repeats of 30 calls); then `check all
# --budget standard` on the GPU. Logs in one archive ($OUT/call38g.tgz).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38g
STEP_TAIL=40 bench_top_p top-p 90 --kernel triton-sample-logits --launch fallback_unroll=4,8
issue_tables
pack
STEP_TAIL=30 step check-all 560 sampling-harness check all --budget standard --device cuda \
  --report-dir "$out/check-all"
pack
