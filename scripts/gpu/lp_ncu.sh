#!/usr/bin/env bash
# Issue 39: what holds triton-logits-processors' sparse kernel (~64 us alone where its
# round trips predict 10-15 us). Nsight Compute on its second eager launch at the bench's
# 256x151936x2048:all batch (launch statistics, occupancy, warp stalls, memory), then the
# probe's timings of rows a program and register caps (scripts/gpu/lp_sparse_probe.py).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu-env.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}"
timeout 200 "$NCU" --clock-control none -k regex:sparse_kernel --launch-skip 1 \
  --launch-count 1 --section LaunchStats --section Occupancy --section WarpStateStats \
  --section SchedulerStats --section SpeedOfLight --section MemoryWorkloadAnalysis \
  python3 scripts/gpu/lp_sparse_probe.py once 2>&1 | grep -v "^==PROF==\|^USDT" | tail -120
for variant in base rows=2 rows=4 maxnreg=64 maxnreg=128; do
  timeout 60 python3 scripts/gpu/lp_sparse_probe.py "$variant" 2>&1 | grep -v "^USDT" | tail -4
done
