#!/usr/bin/env bash
# One device call (nvidia-h200, about 420 s), from the repository root: `check all` at its
# defaults after the tree kernel's new defaults and its re-recorded precompile entries,
# standard cold then quick cold on one GPU (scripts/gpu/standard_at_defaults.sh), then the
# tree-rejection bench table under graph replay. Archives come back in $OUT.
set -u
R=${OUT:-/tmp/out}
T0=$(date +%s)
OUT=/tmp/std SIDE="standard:cold" bash scripts/gpu/standard_at_defaults.sh
cp /tmp/std/defaults.tgz "$R/standard.tgz"
echo "== standard done at $(( $(date +%s) - T0 )) s"
OUT=/tmp/qk NO_INSTALL=1 SIDE="quick:cold" bash scripts/gpu/standard_at_defaults.sh
cp /tmp/qk/defaults.tgz "$R/quick.tgz"
echo "== quick done at $(( $(date +%s) - T0 )) s"
timeout $(( 575 - ($(date +%s) - T0) )) python3 -m sampling_harness bench tree-rejection \
  --device cuda --cuda-graph --repeat 2 --calls 30 --ceiling --report-dir /tmp/bench 2>&1 \
  | grep -v "^USDT\|Warning\|warn(" | tail -20
tar -czf "$R/bench.tgz" -C /tmp bench
echo "== bench done at $(( $(date +%s) - T0 )) s"
