#!/usr/bin/env bash
# Calibration of a family on the CPU cores of a (GPU) machine: N harness seeds of a correct
# kernel at quick (false-fail rate, p-value uniformity), then M seeds of each mutant on the
# checks that must catch it (power). Summaries go to $OUT/calibration/<family>/.
# Usage: scripts/gpu-calibrate.sh FAMILY KERNEL N M [WORKERS]
set -u
family=$1 kernel=$2 runs=$3 mutant_runs=$4 workers=${5:-$(nproc)}
out=${OUT:-/tmp/out}/calibration/$family
work=/tmp/calibration/$family
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
keep() {  # copy a calibration's summaries (not its per-run reports) to $out/$1
  mkdir -p "$out/$1" && cp "$work/$1"/summary.* "$work/$1"/runs.csv "$out/$1"/ 2>/dev/null
}
start=$(date +%s)
python3 -m harness.cli calibrate "$family" --kernel "$kernel" --runs "$runs" --budget quick \
  --device cpu --workers "$workers" --out "$work/$kernel" > "$out/$kernel.log" 2>&1
echo "calibrate $family $kernel x$runs: exit $? in $(( $(date +%s) - start )) s"; keep "$kernel"
for m in $(python3 scripts/registry.py "$family" mutant); do
  [ -z "$(python3 scripts/registry.py "$family" tool "$m")" ] || continue   # sanitizer mutants
  [ "$m" != hangs ] || continue                                           # a 600 s timeout each
  start=$(date +%s)
  python3 -m harness.cli calibrate "$family" --kernel "$m" --runs "$mutant_runs" --budget quick \
    --device cpu --workers "$workers" -k "$(python3 scripts/registry.py "$family" caught "$m")" \
    --out "$work/$m" > "$out/$m.log" 2>&1
  echo "calibrate $family $m x$mutant_runs: exit $? in $(( $(date +%s) - start )) s"; keep "$m"
done
