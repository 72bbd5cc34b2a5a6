#!/usr/bin/env bash
# Issue 38, where the time goes: Nsight Compute (warp states, scheduler, instruction mix,
# and the per-instruction stall samples of the source page) of triton-logprobs with random
# and top ids and of triton-sample-logits' `_select_race`, at the bench's batches; the SASS
# of each compiled kernel into $OUT (benchmarks/sass_histogram.py).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh diag38
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}"
SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy \
  --section SchedulerStats --section WarpStateStats --section InstructionStats \
  --section ComputeWorkloadAnalysis --section SourceCounters"
profile() {  # NAME KERNEL_REGEX WHICH
  step "ncu-$1" 150 "$NCU" --clock-control none -k "regex:$2" --launch-skip 2 \
    --launch-count 1 $SECTIONS -o "$out/$1" -f python3 scripts/gpu/diag38_calls.py "$3"
  "$NCU" --import "$out/$1.ncu-rep" --page details > "$OUT/ncu-$1.txt" 2>&1
  "$NCU" --import "$out/$1.ncu-rep" --page source --csv --print-source sass \
    > "$OUT/ncu-$1-source.csv" 2>&1 || echo "source page failed"
  head -c 400 "$OUT/ncu-$1-source.csv"; echo
  grep -i "warp cycles per issued\|issue slots busy\|stall\|Executed Ipc\|Registers Per\|Achieved Occ\|Duration" \
    "$OUT/ncu-$1.txt" | head -40
}
profile logprobs-random _logprobs_kernel logprobs-random
profile logprobs-top _logprobs_kernel logprobs-top
profile select _select_race sample-logits
profile group-max _group_max sample-logits
for k in _logprobs_kernel _select_race _group_max; do
  step "sass-$k" 60 python3 benchmarks/sass_histogram.py "$k" "$OUT"
done
ls -la "$OUT"
