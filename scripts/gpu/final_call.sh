#!/usr/bin/env bash
# The session's last device call: `check all --budget standard` at its defaults (every family,
# the changed kernels, the direct launcher), then the new families' bench tables, then the
# host costs and bench tables of the direct launcher (scripts/gpu/kernels_direct.sh) in the
# time left. Logs in $OUT. Usage: bash scripts/gpu/final_call.sh
set -u
source scripts/gpu-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
limit=${LIMIT:-560}
left() { echo $(( limit - ($(date +%s) - start) )); }
git log -1 --format='commit %h' 2>/dev/null
RUNS=1 bash scripts/gpu/standard_at_defaults.sh 2>&1 | tail -30
python3 - "$OUT/default-1/report.json" > "$OUT/new-families.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["checks"]:
    if c["family"] in ("logits-processors", "tree-rejection") or c["kernel"] in (
            "triton-rejection", "triton-logprobs", "triton-exact", "triton-sample-logits",
            "triton-inverse-cdf"):
        print(f"{c['family']} | {c['kernel']} | {c['name']} | {c['verdict']} | {c['duration']:.1f} s")
PY
cat "$OUT/new-families.txt"
for family in logits-processors tree-rejection; do
  t=$(left); [ "$t" -gt 60 ] || break
  echo "== bench $family (limit 45 s)"
  timeout 45 python3 -m sampling_harness bench $family --device cuda --cuda-graph --ceiling \
    --repeat 2 --calls 30 --report-dir "$OUT/bench-$family" > "$OUT/bench-$family.log" 2>&1
  echo "exit $?"; grep -E "^\||^\[" "$OUT/bench-$family.log"
done
t=$(left)
if [ "$t" -gt 40 ]; then DEADLINE=$t bash scripts/gpu/kernels_direct.sh > "$OUT/direct.log" 2>&1; fi
grep -v "^    _" "$OUT/direct.log" 2>/dev/null | tail -80
echo "total $(( $(date +%s) - start )) s"
