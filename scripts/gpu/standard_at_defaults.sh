#!/usr/bin/env bash
# `check all --budget standard` at its defaults, RUNS times in a row; with HOLD_GB set, once
# more while another process holds that many GB of the same GPU; ISOLATION=none runs the
# checks in one process (`--isolation none`), for an A/B of the fault handling's cost. Logs
# and reports in $OUT.
# Usage: [ISOLATION=none] RUNS=2 HOLD_GB=40 bash scripts/gpu/standard_at_defaults.sh
set -uo pipefail
source scripts/gpu-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv | tee "$OUT/gpu.txt"
git rev-parse --short HEAD 2>/dev/null | tee "$OUT/commit.txt"
one_run() {     # $1: label
  local start=$(date +%s.%N)
  python3 -m sampling_harness check all --budget standard --report-dir "$OUT/$1" \
    ${ISOLATION:+--isolation "$ISOLATION"} > "$OUT/$1.log" 2>&1
  local rc=$?
  local end=$(date +%s.%N)
  python3 - "$OUT/$1" "$1" "$rc" "$start" "$end" <<'PY'
import json, sys
d, label, rc, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
try:
    r = json.load(open(f"{d}/report.json"))
except Exception as exc:
    print(f"{label}: exit {rc}, {end - start:.0f} s, no report ({exc})"); sys.exit()
bad = [f"{c['kernel']}/{c['name']}: {c['verdict']}: {c['message'][:160]}" for c in r["checks"]
       if c["verdict"] != c.get("expected", "pass") or c["verdict"] == "error"]
alone = [f"{c['kernel']}/{c['name']}" for c in r["checks"] if c["details"].get("check_retries")]
print(f"{label}: exit {rc}, {end - start:.0f} s wall, report {r['seconds']} s, "
      f"verdict {r['verdict']}, {len(r['checks'])} checks, {len(r['skipped'])} skipped, "
      f"workers {r.get('workers')}, memory_budget {r.get('memory_budget', 0) / 2**30:.2f} GiB, "
      f"re-run alone: {alone or 'none'}")
for line in bad:
    print("   ", line)
slow = sorted(r["checks"], key=lambda c: -c["duration"])[:5]
print("    slowest:", ", ".join(f"{c['kernel']}/{c['name']} {c['duration']:.0f}s" for c in slow))
PY
}
for i in $(seq 1 "${RUNS:-1}"); do one_run "default-$i"; done
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
  one_run "held-${HOLD_GB}GB"
  kill $holder
fi
