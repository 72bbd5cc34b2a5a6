#!/usr/bin/env bash
# Family logits-processors on one GPU: the project's kernels at --budget standard, the
# self-test (the kernels at quick, then each mutant at quick on the checks that must catch
# it), and the bench at 256 x 151936 with histories of 2048 (CUDA graphs, read ceiling;
# inputs "all", every processor on, and "dense", the bitmask alone: their difference is
# what the sparse processors cost). Prints each step's exit code and milliseconds, then the
# seconds of every check at standard and at quick, the self-test's table and the bench
# table; logs and reports come back under $OUT/logits-processors/. About 5 minutes on an
# H100 with a cold Triton cache.
# Usage: scripts/gpu/logits_processors.sh
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu-env.sh
out=${OUT:-/tmp/out}/logits-processors
mkdir -p "$out"
python3 -c "import torch, triton; print(torch.cuda.get_device_name(), 'torch', torch.__version__, 'triton', triton.__version__)"

step() {  # name command...: run it, its output to $out/name.log, one line with exit and seconds
  local name=$1 start=$(date +%s%N); shift
  "$@" > "$out/$name.log" 2>&1
  local code=$?
  echo "$name: exit $code in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  tail -n 4 "$out/$name.log" | sed 's/^/    /'
}
seconds() {  # report.json: the seconds of every check, one line each
  python3 - "$1" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1]))["checks"]:
    print(f"    {c['kernel']:26s} {c['name']:18s} {c['verdict']:5s} {c['duration']:8.2f} s")
PY
}

step check-standard python3 -m sampling_harness check logits-processors --device cuda \
  --budget standard --report-dir "$out/standard"
step selftest python3 -m sampling_harness selftest logits-processors --device cuda \
  --report-dir "$out/selftest"
step bench python3 -m sampling_harness bench logits-processors --device cuda --cuda-graph \
  --ceiling --shape 256x151936x2048 --report-dir "$out/bench"

echo "seconds per check at standard:"; seconds "$out/standard/report.json"
echo "seconds per check at quick (the self-test's clean run):"
seconds "$out/selftest/logits-processors-clean/report.json"
echo "self-test:"; grep '^|' "$out/selftest/selftest.md"
echo "bench:"; cat "$out/bench/bench.md"
