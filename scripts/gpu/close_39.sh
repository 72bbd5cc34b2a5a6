#!/usr/bin/env bash
# One device call (DEADLINE default 560 s) at the commit that closes issue 39: on a fresh
# machine, `check logits-processors --budget quick` (cold: it compiles), then `--budget
# standard`, the family's self-test on the GPU (every mutant must fail), then `check all
# --budget quick`. Per-check seconds in the logs (part.tar.gz).
set -u
cd "$(dirname "$0")/../.."
DEADLINE=${DEADLINE:-560}
source scripts/gpu/steps.sh part
STEP_TAIL=25
step lp-quick 120 python3 -m sampling_harness check logits-processors --budget quick \
  --device cuda --report-dir "$out/lp-quick"
step lp-standard 150 python3 -m sampling_harness check logits-processors \
  --budget standard --device cuda --report-dir "$out/lp-standard"
step lp-selftest 120 python3 -m sampling_harness selftest logits-processors --device cuda \
  --report-dir "$out/lp-selftest"
step check-all-quick 200 python3 -m sampling_harness check all --budget quick \
  --device cuda --report-dir "$out/check-all-quick"
tar -czf "$OUT/part.tar.gz" -C /tmp part
echo "total $(( $(date +%s) - start )) s"
