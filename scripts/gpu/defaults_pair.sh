# `check all` at its defaults, two runs side by side on a host of two GPUs, each pinned to
# its GPU and given its own Triton cache (TRITON_CACHE_DIR): "cold" a fresh one, "warm" the
# one an earlier run on this machine filled. Issue 52's timings: three standard runs and a
# cold quick run, in two calls:
#
#   RUNS="standard:cold standard:cold" bash scripts/gpu/defaults_pair.sh     # call 1
#   RUNS="standard:warm quick:cold" bash scripts/gpu/defaults_pair.sh        # call 2
#
# Run i of RUNS goes to GPU i, with the cache /tmp/triton-cache-i (cold: emptied first). The
# two runs share the host's cores (each its 8 xdist workers and its precompiler), as the
# runs of a CI host with two GPUs would. Each run's line (exit, wall, the report's seconds,
# verdict, checks not as expected, slowest five) is printed; reports and logs in
# $OUT/BUDGET-i, packed into $OUT/defaults.tgz.
set -uo pipefail
source scripts/gpu-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || cat COMMIT 2>/dev/null)"
i=0
for run in ${RUNS:?RUNS=\"BUDGET:cold|warm ...\"}; do
  budget=${run%%:*} cache=${run#*:} dir=/tmp/triton-cache-$i
  [ "$cache" = cold ] && rm -rf "$dir"
  mkdir -p "$dir"
  (
    export CUDA_VISIBLE_DEVICES=$i TRITON_CACHE_DIR=$dir
    t0=$(date +%s.%N)
    python3 -m sampling_harness check all --budget "$budget" --report-dir "$OUT/$budget-$i" \
      > "$OUT/$budget-$i.log" 2>&1
    rc=$?
    python3 - "$OUT/$budget-$i" "$run on GPU $i" "$rc" "$t0" "$(date +%s.%N)" <<'PY'
import json, sys
d, label, rc, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), *map(float, sys.argv[4:])
try:
    r = json.load(open(f"{d}/report.json"))
except Exception as exc:
    sys.exit(print(f"{label}: exit {rc}, {t1 - t0:.0f} s, no report ({exc})"))
bad = [f"{c['kernel']}/{c['check']}: {c['verdict']}: {c['message'][:160]}" for c in r["checks"]
       if c["verdict"] != c.get("expected", "pass") or c["verdict"] == "error"]
print(f"{label}: exit {rc}, {t1 - t0:.1f} s wall, report {r['seconds']} s, verdict "
      f"{r['verdict']}, {len(r['checks'])} checks, {len(r['skipped'])} skipped, workers "
      f"{r.get('workers')}; not as expected: {bad or 'none'}")
slow = sorted(r["checks"], key=lambda c: -c["duration"])[:5]
print("   slowest:", ", ".join(f"{c['kernel']}/{c['check']} {c['duration']:.0f} s" for c in slow))
PY
  ) &
  i=$(( i + 1 ))
done
wait
tar -czf "$OUT/defaults.tgz" -C "$OUT" --exclude defaults.tgz .
