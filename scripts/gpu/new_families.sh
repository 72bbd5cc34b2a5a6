#!/usr/bin/env bash
# Issues 39 and 40 on one GPU, in one device call (DEADLINE seconds, default 540):
#   tree-rejection: `check --budget standard` (both kernels), the self-test of every mutant
#     of the family (each at its own budget), the chain family's float32 acceptance floor on
#     the accept-u-fp32 mutant (must fail), the bench (eager calls: the output's width D + 1
#     is read on the host, so no CUDA graph);
#   logits-processors: `check --budget standard`, the self-test (clean kernels at quick,
#     each mutant at its budget), the bench at 256x151936x2048 and 32x128256x1024 with the
#     read ceiling, and two launch sweeps of the Triton kernel (PDL on and off with two
#     sparse_warps, where it once swept the since-removed designs; the dense kernel's block
#     and warps).
# Every step prints its exit code and seconds (scripts/gpu/steps.sh); summary.txt holds the
# verdicts, the seconds per check and the tables; all logs and reports go into one archive,
# $OUT/new-families.tar.gz (a device call brings back at most 8 files).
# Usage: [DEADLINE=540] bash scripts/gpu/new_families.sh
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh new-families
STEP_TAIL=6
summary() {  # report.json -> seconds of every check, one line each
  python3 - "$1" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as exc:
    print(f"    no report: {exc}"); sys.exit()
for c in r["checks"]:
    print(f"    {c['kernel']:28s} {c['name']:18s} {c['verdict']:5s} {c['duration']:8.2f} s")
PY
}
H="python3 -m sampling_harness"

step tree-standard 150 $H check tree-rejection --budget standard --device cuda \
  --report-dir "$out/tree-standard"
mutants=$(python3 scripts/registry.py tree-rejection mutant | sed 's/^/--kernel /')
# shellcheck disable=SC2086  # one --kernel per mutant
step tree-selftest 150 $H selftest tree-rejection --device cuda $mutants \
  --report-dir "$out/tree-selftest"
step chain-floor 60 $H check rejection --kernel accept-u-fp32 --budget standard \
  --device cuda -k test_acceptance_tail --report-dir "$out/chain-floor"
step tree-bench 60 $H bench tree-rejection --device cuda --repeat 2 --calls 20 \
  --report-dir "$out/tree-bench"
step lp-standard 150 $H check logits-processors --budget standard --device cuda \
  --report-dir "$out/lp-standard"
step lp-selftest 150 $H selftest logits-processors --device cuda --report-dir "$out/lp-selftest"
step lp-bench 60 $H bench logits-processors --device cuda --cuda-graph --ceiling --repeat 2 \
  --calls 30 --shape 256x151936x2048:all --shape 256x151936x2048:dense \
  --shape 32x128256x1024:all --report-dir "$out/lp-bench"
step lp-designs 70 $H bench logits-processors --device cuda --cuda-graph --ceiling --repeat 2 \
  --calls 30 --kernel triton-logits-processors --shape 256x151936x2048:all \
  --shape 32x128256x1024:all --launch pdl=False,True --launch sparse_warps=0,16 \
  --report-dir "$out/lp-designs"
step lp-dense 50 $H bench logits-processors --device cuda --cuda-graph --ceiling --repeat 2 \
  --calls 30 --kernel triton-logits-processors --shape 256x151936x2048:dense \
  --launch block=2048,4096,8192 --launch warps=4,8 --report-dir "$out/lp-dense"

{
  echo "commit $(git log -1 --format=%h 2>/dev/null || cat COMMIT 2>/dev/null)"
  for name in tree-standard chain-floor lp-standard; do
    echo "== $name"; grep -E "^sampling-harness: " "$out/$name.log"; summary "$out/$name/report.json"
  done
  for name in tree-selftest lp-selftest; do
    echo "== $name"; grep -h '^|' "$out/$name/selftest.md" 2>/dev/null || tail -5 "$out/$name.log"
  done
  for name in tree-bench lp-bench lp-designs lp-dense; do
    [ -f "$out/$name.log" ] || continue
    echo "== $name"; grep -E '^\||^\[|^device' "$out/$name.log"
  done
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
tar -czf "$OUT/new-families.tar.gz" -C /tmp new-families
echo "total $(( $(date +%s) - start )) s"
