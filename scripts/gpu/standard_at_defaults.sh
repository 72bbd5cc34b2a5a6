#!/usr/bin/env bash
# `check all` at its defaults. Default: `--budget standard`, RUNS times in a row; with HOLD_GB
# set, once more while another process holds that many GB of the same GPU; ISOLATION=none
# runs the checks in one process (`--isolation none`), for an A/B of the fault handling's
# cost. SIDE="standard:cold quick:cold" instead runs each BUDGET:CACHE at once, run i pinned
# to GPU i with its own Triton cache /tmp/triton-cache-i (cold: emptied first; warm: the one
# an earlier run on this machine filled), sharing the host's cores as a CI host of several
# GPUs would. Each run's line: exit, wall, the report's seconds, verdict, checks not as
# expected, slowest five. Logs and reports in $OUT, packed into $OUT/defaults.tgz.
# Usage: [ISOLATION=none] RUNS=2 HOLD_GB=40 bash scripts/gpu/standard_at_defaults.sh
#        SIDE="standard:cold standard:cold" bash scripts/gpu/standard_at_defaults.sh
set -uo pipefail
source scripts/gpu-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv | tee "$OUT/gpu.txt"
echo "commit $(cat COMMIT 2>/dev/null || git rev-parse --short HEAD)"
one_run() {     # LABEL BUDGET
  local start=$(date +%s.%N)
  python3 -m sampling_harness check all --budget "$2" --report-dir "$OUT/$1" \
    ${ISOLATION:+--isolation "$ISOLATION"} > "$OUT/$1.log" 2>&1
  local rc=$?
  python3 - "$OUT/$1" "$1" "$rc" "$start" "$(date +%s.%N)" <<'PY'
import json, sys
d, label, rc, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), *map(float, sys.argv[4:])
try:
    r = json.load(open(f"{d}/report.json"))
except Exception as exc:
    sys.exit(print(f"{label}: exit {rc}, {t1 - t0:.0f} s, no report ({exc})"))
bad = [f"{c['kernel']}/{c['check']}: {c['verdict']}: {c['message'][:160]}" for c in r["checks"]
       if c["verdict"] != c.get("expected", "pass") or c["verdict"] == "error"]
alone = [f"{c['kernel']}/{c['check']}" for c in r["checks"] if c["details"].get("check_retries")]
print(f"{label}: exit {rc}, {t1 - t0:.1f} s wall, report {r['seconds']} s, verdict "
      f"{r['verdict']}, {len(r['checks'])} checks, {len(r['skipped'])} skipped, workers "
      f"{r.get('workers')}, memory_budget {r.get('memory_budget', 0) / 2**30:.2f} GiB, "
      f"re-run alone: {alone or 'none'}; not as expected: {bad or 'none'}")
slow = sorted(r["checks"], key=lambda c: -c["duration"])[:5]
print("   slowest:", ", ".join(f"{c['kernel']}/{c['check']} {c['duration']:.0f} s" for c in slow))
PY
}
if [ -n "${SIDE:-}" ]; then
  i=0
  for run in $SIDE; do
    budget=${run%%:*} cache=${run#*:} dir=/tmp/triton-cache-$i
    [ "$cache" = cold ] && rm -rf "$dir"
    mkdir -p "$dir"
    (export CUDA_VISIBLE_DEVICES=$i TRITON_CACHE_DIR=$dir; one_run "$budget-$i" "$budget") &
    i=$(( i + 1 ))
  done
  wait
else
  for i in $(seq 1 "${RUNS:-1}"); do one_run "default-$i" standard; done
fi
if [ -n "${HOLD_GB:-}" ]; then
  python3 - "$HOLD_GB" > "$OUT/hold.log" 2>&1 <<'PY' &
import sys, time, torch
held = torch.empty(int(float(sys.argv[1]) * 1e9), dtype=torch.uint8, device="cuda")
print(f"holding {held.numel() / 1e9:.0f} GB", flush=True)
time.sleep(3600)
PY
  holder=$!
  sleep 20
  nvidia-smi --query-gpu=memory.used,memory.total --format=csv | tee -a "$OUT/gpu.txt"
  one_run "held-${HOLD_GB}GB" standard
  kill $holder
fi
tar -czf "$OUT/defaults.tgz" -C "$OUT" --exclude defaults.tgz .
