#!/usr/bin/env bash
# The cost of fault isolation on a GPU: `check all` with its checks in isolated workers
# (the default) and without the fault machinery (`--isolation none`), the same 8 xdist
# workers either way. `bash scripts/gpu/isolation_ab.sh BUDGET ROUNDS DEADLINE_S`: a warm-up
# run (the Triton cache), then ROUNDS rounds, the order alternating each round; no run starts
# after DEADLINE_S seconds. Per run: exit, wall, the run's own seconds, the checks' seconds
# summed, kernel calls (times.txt).
set -uo pipefail
budget=${1:-quick}; rounds=${2:-3}; deadline=${3:-1e9}
out=${OUT:-/tmp/out}; mkdir -p "$out"
source scripts/gpu-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
git rev-parse --short HEAD >> "$out/gpu.txt" 2>/dev/null
t_start=$(date +%s)
run() {   # name, isolation
    local t0=$(date +%s)
    [ $(( t0 - t_start )) -lt "${deadline%.*}" ] || { echo "$1 not run: deadline" >> "$out/times.txt"; return; }
    python3 -m sampling_harness check all --budget "$budget" --device cuda --isolation "$2" \
        --report-dir "$out/$1" > "$out/$1.log" 2>&1; local code=$?
    local wall=$(( $(date +%s) - t0 ))
    python3 - "$out/$1/report.json" "$1" "$code" "$wall" <<'PY' | tee -a "$out/times.txt"
import json, sys
path, name, code, wall = sys.argv[1:]
try:
    r = json.load(open(path))
except OSError:
    print(name, "exit", code, "wall", wall, "s, no report"); sys.exit()
print(name, "exit", code, "wall", wall, "s;", r["verdict"], len(r["checks"]), "checks; run",
      r.get("seconds"), "s; checks summed", round(sum(c["duration"] for c in r["checks"]), 1),
      "s; kernel calls", sum(c["details"].get("kernel_calls", 0) for c in r["checks"]))
PY
    rm -rf "$out/$1"
}
run warmup worker
for round in $(seq 1 "$rounds"); do
    if [ $(( round % 2 )) = 1 ]; then run "none$round" none; run "worker$round" worker
    else run "worker$round" worker; run "none$round" none; fi
done
