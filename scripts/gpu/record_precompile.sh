#!/usr/bin/env bash
# The shipped precompile list (harness/scale/compile_variants.json) recorded again after a
# kernel change: cold runs of `check FAMILY` at quick and at standard, each on an empty Triton
# cache, without the precompiler (every variant compiled by the JIT, so the census sees it),
# the compile census on (benchmarks/compile_census.py). The two runs go at once when
# QUICK_GPU and STANDARD_GPU name two GPUs, else one after the other. The list's stale
# entries (recorded key != today's key) are counted before and after. The new list
# (compile_variants.json), the census logs, the run logs and reports come back in
# $OUT/record.tgz.
# Usage: [FAMILY=all] [QUICK_GPU=0 STANDARD_GPU=1] bash scripts/gpu/record_precompile.sh
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh record
family=${FAMILY:-all}
stale() {  # the shipped list's entries whose key today differs from the recorded one
  python3 - "$1" <<'PY'
import sys
from pathlib import Path
from sampling_harness.scale import precompile
precompile.settle_cache_keys()
entries = precompile.listed(Path(sys.argv[1]))
stale = precompile.stale(entries, 90)
kernels = sorted({e["kernel"].rsplit(".", 1)[-1] for e in stale})
print(f"{len(stale)} of {len(entries)} listed variants stale: {kernels}")
PY
}
echo "before: $(stale harness/scale/compile_variants.json)"
census() {  # BUDGET GPU
  rm -rf "/tmp/tc-$1"
  STEP_TAIL=12 step "check-$1" 520 env CUDA_VISIBLE_DEVICES="$2" TRITON_CACHE_DIR="/tmp/tc-$1" \
    COMPILE_LOG="$out/$1.jsonl" PYTHONPATH=benchmarks/compile_hook:. \
    python3 -m sampling_harness check "$family" --budget "$1" --device cuda --no-precompile \
    --report-dir "$out/check-$1"
}
if [ -n "${QUICK_GPU:-}" ] && [ -n "${STANDARD_GPU:-}" ]; then
  census quick "$QUICK_GPU" > "$out/quick.txt" 2>&1 &
  census standard "$STANDARD_GPU"
  wait
  cat "$out/quick.txt"
else
  census quick "${QUICK_GPU:-0}"
  census standard "${STANDARD_GPU:-0}"
fi
python3 - "$out" "$family" <<'PY'
import json, sys
from pathlib import Path
from sampling_harness.scale import precompile
out, family = Path(sys.argv[1]), sys.argv[2]
new = precompile.record({b: str(out / f"{b}.jsonl") for b in ("quick", "standard")})
fresh = new["variants"]
suites = {s for e in fresh for s, _ in e["users"]}
old = json.loads(precompile.VARIANTS.read_text())
kept = [v for v in old["variants"] if family != "all"
        and not any(s in suites for s, _ in v["users"])]
precompile.write_list({"about": old["about"], "variants": fresh + kept},
                      out / "compile_variants.json")
print(f"{len(fresh)} variants recorded for {sorted(suites)}; {len(fresh) + len(kept)} in the list")
PY
echo "after: $(stale "$out/compile_variants.json")"
pack
