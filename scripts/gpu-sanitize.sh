#!/usr/bin/env bash
# Runs `check FAMILY --kernel K --sanitize TOOL` for each FAMILY:KERNEL:TOOL argument (KERNEL
# "clean" = every registered clean kernel), one line each (exit code, seconds, verdicts and
# messages), then the head of each sanitizer log. Usage: scripts/gpu-sanitize.sh sample:triton-exact:memcheck ...
set -u
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
mkdir -p /tmp/gpu-sanitize
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1
echo "compute-sanitizer: $(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
for item in "$@"; do
  IFS=: read -r family kernel tool <<<"$item"
  args=()
  [ "$kernel" = clean ] || args=(--kernel "$kernel")
  dir=/tmp/gpu-sanitize/$family-$kernel-$tool start=$(date +%s)
  timeout "${RUN_TIMEOUT:-300}" python3 -m harness.cli check "$family" "${args[@]}" --device cuda \
    --budget "${BUDGET:-quick}" --report-dir "$dir" --sanitize "$tool" >"$dir.log" 2>&1
  code=$?
  echo "$family/$kernel $tool: exit $code in $(( $(date +%s) - start )) s"
  python3 -c "import json; r=json.load(open('$dir/report.json')); [print('   ', c['kernel'], c['name'], c['verdict'], c['message'][:400]) for c in r['checks']]" 2>/dev/null || tail -3 "$dir.log"
done
for log in $(ls /tmp/gpu-sanitize/*/sanitize/*/*.log 2>/dev/null | head -${LOG_HEADS:-3}); do
  echo "== $log"; grep -v "Host Frame" "$log" | head -${LOG_LINES:-25}
done
