#!/usr/bin/env bash
# Issue 38: the shipped precompile list after the sample-logits kernels change (first when
# new constexprs PDL, PREFETCH, UNROLL left their 44 listed variants stale; again, as run
# record38b, when `_fallback_race` took the top-p scratch). Cold runs of `check
# sample-logits` at quick and standard, each on an empty Triton cache, with the compile
# census hook; their entries replace sample-logits' in harness/scale/compile_variants.json
# (the other families' entries kept, in place). The new list and the logs come back in
# $OUT. Usage: bash scripts/gpu/record38.sh [RUN] (default record38: the logs' name).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh "${1:-record38}"
for budget in quick standard; do
  rm -rf "/tmp/tc-$budget"
  STEP_TAIL=8 step "check-$budget" 240 env TRITON_CACHE_DIR="/tmp/tc-$budget" \
    COMPILE_LOG="$out/$budget.jsonl" PYTHONPATH=benchmarks/compile_hook:. \
    sampling-harness check sample-logits --budget "$budget" --device cuda \
    --report-dir "$out/check-$budget"
done
python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
from sampling_harness.scale import precompile
out = Path(sys.argv[1])
new = precompile.record({b: str(out / f"{b}.jsonl") for b in ("quick", "standard")})
fresh = [v for v in new["variants"] if ".sample_logits." in v["kernel"]]
old = json.loads(precompile.VARIANTS.read_text())
kept, placed = [], False
for v in old["variants"]:
    if ".sample_logits." in v["kernel"]:
        if not placed:
            kept.extend(fresh)
            placed = True
        continue
    kept.append(v)
if not placed:
    kept.extend(fresh)
rows = ",\n".join(json.dumps(entry) for entry in kept)
Path(out / "compile_variants.json").write_text(f'{{"about": {json.dumps(old["about"])},\n'
                                               f'"variants": [\n{rows}\n]}}\n')
print(f"{len(fresh)} sample-logits variants recorded; {len(kept)} in the list")
PY
cp "$out/compile_variants.json" "$OUT/compile_variants.json"
pack
