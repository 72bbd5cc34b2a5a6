#!/usr/bin/env bash
# Family tree-rejection on one GPU: `check tree-rejection --budget standard` (both kernels
# must pass), the self-test of every mutant of the family on the GPU at its budget, with the
# seconds each took (coin-fp32-inclusive and residual-fp32-noise at standard; the clean
# kernels are the standard run's),
# the chain family's float32 floor (`check rejection -k test_acceptance_tail` at standard on
# the accept-u-fp32 mutant, which must fail, and on torch-rejection, which must pass), and
# `bench tree-rejection` (eager calls: the kernels read D on the host). Logs and reports go to
# $OUT/tree-rejection; times.txt holds one line per step. Each step stops after LIMIT
# seconds (default 420).
# Usage (from the repository root): scripts/gpu/tree_rejection.sh
source scripts/gpu-env.sh
set -u
out=${OUT:-/tmp/out}/tree-rejection
mkdir -p "$out"
: > "$out/times.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, \
torch.cuda.get_device_name())" | tee "$out/env.txt"
timed() {  # NAME COMMAND...: run it under the time limit, log to NAME.log, note its time
  local name=$1 start end code; shift
  start=$(date +%s.%N)
  timeout "${LIMIT:-420}" "$@" >"$out/$name.log" 2>&1; code=$?
  end=$(date +%s.%N)
  echo "$name: exit $code in $(python3 -c "print(f'{$end - $start:.1f}')") s" | tee -a "$out/times.txt"
}
timed check-standard python3 -m sampling_harness check tree-rejection --budget standard \
  --device cuda --report-dir "$out/check-standard"
grep -E '^\[|PASS|FAIL|ERROR' "$out/check-standard.log"
mutants=$(python3 scripts/registry.py tree-rejection mutant | sed 's/^/--kernel /')
# shellcheck disable=SC2086  # one --kernel per mutant
timed selftest python3 -m sampling_harness selftest tree-rejection --device cuda $mutants \
  --report-dir "$out/selftest"
grep -E '^\| tree-rejection' "$out/selftest.log"
timed chain-floor-mutant python3 -m sampling_harness check rejection --kernel accept-u-fp32 \
  --budget standard --device cuda -k test_acceptance_tail --report-dir "$out/chain-floor-mutant"
grep -E '^\[' "$out/chain-floor-mutant.log"
timed chain-floor-clean python3 -m sampling_harness check rejection --kernel torch-rejection \
  --budget standard --device cuda -k test_acceptance_tail --report-dir "$out/chain-floor-clean"
grep -E '^\[' "$out/chain-floor-clean.log"
timed bench python3 -m sampling_harness bench tree-rejection --device cuda \
  --report-dir "$out/bench"
grep -E '^\|' "$out/bench.log"
