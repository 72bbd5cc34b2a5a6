#!/usr/bin/env bash
# Calibration of a family on the CPU cores of a (GPU) machine: N harness seeds of a correct
# kernel at quick (false-fail rate, p-value uniformity), then M seeds of each mutant on the
# checks that must catch it (power; M = 0 skips them). Each calibration stops after LIMIT
# seconds (default 500); its summaries come back under $OUT/calibration/<family>/<kernel>/.
# RESUME=DIR seeds the work directory (a calibration resumes from the runs it holds).
# Usage: [RESUME=DIR] [LIMIT=S] scripts/gpu-calibrate.sh FAMILY KERNEL N M [WORKERS]
set -u
family=$1 kernel=$2 runs=$3 mutant_runs=$4 workers=${5:-$(nproc)}
out=${OUT:-/tmp/out}/calibration/$family
work=/tmp/calibration/$family
mkdir -p "$out" "$work"
[ -z "${RESUME:-}" ] || cp -r "$RESUME"/. "$work"/
source "$(dirname "$0")/gpu-env.sh"
keep() {  # the summaries of one calibration (per-run reports stay on the machine)
  mkdir -p "$out/$1" && cp "$work/$1"/summary.* "$work/$1"/runs.csv "$out/$1"/ 2>/dev/null
}
calibrate() {  # name runs [-k selection]
  local name=$1 n=$2 start=$(date +%s); shift 2
  timeout "${LIMIT:-500}" python3 -m sampling_harness calibrate "$family" --kernel "$name" --runs "$n" \
    --budget quick --device cpu --workers "$workers" --out "$work/$name" "$@" > "$out/$name.log" 2>&1
  echo "calibrate $family $name x$n: exit $? in $(( $(date +%s) - start )) s"; keep "$name"
}
[ "$runs" = 0 ] || calibrate "$kernel" "$runs"
[ "$mutant_runs" = 0 ] && exit 0
for m in $(python3 scripts/registry.py "$family" mutant); do
  [ -z "$(python3 scripts/registry.py "$family" tool "$m")" ] || continue   # sanitizer mutants
  [ "$m" != hangs ] || continue                                           # a 600 s timeout each
  calibrate "$m" "$mutant_runs" -k "$(python3 scripts/registry.py "$family" caught "$m")"
done
