#!/usr/bin/env bash
# The GPU validation of family `sample`: every clean kernel and every mutant at the standard
# budget, then the benchmark. For a GPU machine with torch and triton preinstalled (offline).
# Usage: scripts/gpu-validate.sh [OUTDIR]   (default: reports/gpu)
set -u
out=${1:-${OUT:-reports/gpu}}
mkdir -p "$out/runs"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || python3 -m pip install -q --no-index --no-deps --no-build-isolation -e .
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
harness() { python3 -m harness.cli "$@"; }

for k in torch-fp32 torch-fp64 triton-exact; do
  start=$(date +%s)
  harness check sample --kernel "$k" --device cuda --budget standard --report-dir "$out/runs/$k" >"$out/runs/$k.log" 2>&1
  echo "clean  $k: exit $? in $(( $(date +%s) - start )) s"
done
python3 -c "from kernels import MUTANTS; print('\n'.join(MUTANTS['sample']))" | while read -r m; do
  extra=(--call-timeout 120)
  case $m in
    hangs) extra=(--call-timeout 5 -k test_validity) ;;
    seed-row-overlap) extra=(-k test_independence) ;;  # one generator per row: slow by design
  esac
  start=$(date +%s)
  harness check sample --kernel "$m" --device cuda --budget standard --report-dir "$out/runs/$m" "${extra[@]}" >"$out/runs/$m.log" 2>&1
  echo "mutant $m: exit $? in $(( $(date +%s) - start )) s"
done
harness bench sample --device cuda --report-dir "$out/bench" 2>&1 | tee "$out/bench.log"
for d in "$out"/runs/*/; do cat "$d/summary.md"; echo; done >"$out/summaries.md"
tar czf "$out/runs.tgz" -C "$out" runs && rm -rf "$out/runs"
grep -h '^| ' "$out/summaries.md" | grep -v '^| kernel\|^|---' | cut -c1-220
