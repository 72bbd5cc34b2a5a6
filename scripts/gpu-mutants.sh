#!/usr/bin/env bash
# Every mutant of the given families at the standard budget on the checks its registry entry
# names, then every clean kernel of those families; one line per run (exit code, seconds,
# the verdict of each check). Usage: scripts/gpu-mutants.sh FAMILY...
set -u
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1
run() {  # family kind name [-k selection]
  local family=$1 kind=$2 name=$3; shift 3
  local dir=/tmp/gpu-runs/$family-$name start=$(date +%s)
  timeout "${RUN_TIMEOUT:-150}" python3 -m harness.cli check "$family" --kernel "$name" --device cuda \
    --budget standard --report-dir "$dir" --call-timeout 60 "$@" >"$dir.log" 2>&1
  local code=$?
  local verdicts
  verdicts=$(python3 -c "import json,sys; r=json.load(open('$dir/report.json')); print(' '.join(c['name']+'='+c['verdict'] for c in r['checks']))" 2>/dev/null)
  echo "$kind $family/$name: exit $code in $(( $(date +%s) - start )) s: $verdicts"
}
for family in "$@"; do
  for m in $(python3 scripts/registry.py "$family" mutant); do
    sel=$(python3 scripts/registry.py "$family" caught "$m")
    run "$family" mutant "$m" -k "$sel"
  done
  for k in $(python3 scripts/registry.py "$family" tested); do
    [ -n "${SKIP_CLEAN:-}" ] || run "$family" clean "$k"
  done
done
