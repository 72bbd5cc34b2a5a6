#!/usr/bin/env bash
# Issue 38, top-p alone, after call38h's out-of-memory (scratch for every row of the
# checks' large batches): the top-p scratch held for at most COPY_ROWS rows. `check
# sample-logits --budget standard`, then the top-p bench (torch's sort path eager beside),
# then the issue's tables in one run (--cuda-graph --ceiling, 2 repeats of 30 calls).
# Logs in $OUT/call38m.tgz.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38m
STEP_TAIL=12 step check-sample-logits 220 sampling-harness check sample-logits \
  --budget standard --device cuda --report-dir "$out/check-sample-logits"
pack
STEP_TAIL=20 bench_top_p top-p 90
pack
issue_tables
pack
