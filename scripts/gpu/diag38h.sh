#!/usr/bin/env bash
# Issue 38: where the whole-row fallback spends a top-p-alone call (256x151936:flat-top-p):
# Nsight Compute's warp states and per-SASS-line stall samples of `_fallback_race`, and
# its SASS. One archive ($OUT/diag38h.tgz).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh diag38h
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
STEP_TAIL=60 step ncu 200 "$NCU" --clock-control none -k regex:_fallback_race --launch-skip 2 \
  --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section SchedulerStats --section WarpStateStats --section SourceCounters \
  --section MemoryWorkloadAnalysis -o "$out/fallback" -f \
  python3 scripts/gpu/diag38_calls.py flat-top-p
"$NCU" --import "$out/fallback.ncu-rep" --page details > "$out/ncu-fallback.txt" 2>&1
"$NCU" --import "$out/fallback.ncu-rep" --page source --csv --print-source sass \
  > "$out/ncu-fallback-source.csv" 2>&1
grep -i "duration\|issue slots\|warp cycles per issued\|eligible\|registers per\|achieved occ\|throughput\|local" \
  "$out/ncu-fallback.txt" | head -30
rm -f "$out"/*.ncu-rep
pack
