#!/usr/bin/env bash
# The GPU validation of one family: every clean kernel at the standard budget, every
# mutant at the standard budget on the checks its registry entry says must catch it, then
# the benchmark (families that have one). For a GPU machine with torch and triton preinstalled (offline).
# Usage: scripts/gpu-validate.sh FAMILY|all [OUTDIR]   (default OUTDIR: $OUT or reports/gpu)
set -u
family=${1:?usage: scripts/gpu-validate.sh FAMILY|all [OUTDIR]}
if [ "$family" = all ]; then
  for f in $(python3 -c "from harness.families import FAMILIES; print(' '.join(FAMILIES))"); do
    bash "$0" "$f" "${2:-${OUT:-reports/gpu}}"
  done
  exit 0
fi
out=${2:-${OUT:-reports/gpu}}/$family
mkdir -p "$out/runs"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || python3 -m pip install -q --no-index --no-deps --no-build-isolation -e .
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
harness() { python3 -m harness.cli "$@"; }
names() { python3 scripts/registry.py "$family" "$1"; }

for k in $(names tested); do
  start=$(date +%s)
  harness check "$family" --kernel "$k" --device cuda --budget standard --report-dir "$out/runs/$k" >"$out/runs/$k.log" 2>&1
  echo "clean  $k: exit $? in $(( $(date +%s) - start )) s"
done
caught() { python3 scripts/registry.py "$family" caught "$1"; }
for m in $(names mutant); do
  extra=(--call-timeout 120 -k "$(caught "$m")")
  case $m in
    hangs) extra=(--call-timeout 5 -k test_validity) ;;
  esac
  start=$(date +%s)
  harness check "$family" --kernel "$m" --device cuda --budget standard --report-dir "$out/runs/$m" "${extra[@]}" >"$out/runs/$m.log" 2>&1
  echo "mutant $m: exit $? in $(( $(date +%s) - start )) s"
done
if python3 -c "from harness.families import FAMILIES; exit(FAMILIES['$family'].bench is None)"; then
  harness bench "$family" --device cuda --report-dir "$out/bench" 2>&1 | tee "$out/bench.log"
fi
for d in "$out"/runs/*/; do cat "$d/summary.md"; echo; done >"$out/summaries.md"
tar czf "$out/runs.tgz" -C "$out" runs && rm -rf "$out/runs"
grep -h '^| ' "$out/summaries.md" | grep -v '^| kernel\|^|---' | cut -c1-220
