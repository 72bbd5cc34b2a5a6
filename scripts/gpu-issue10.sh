#!/usr/bin/env bash
# Issue 10 on one GPU (H100): (a) triton-exact's launch sweep at 256 x 151936 toward 80 % of
# the memory floor, (b) triton-inverse-cdf's launch sweep, (c) the CUDA-graph bench of both
# against torch-fp32/fp64 at 256x151936, 32x128256, 1x32000, (d) the coupled and exactness
# tests on CUDA, (e) triton-inverse-cdf's check at the standard budget. Each step has its own
# time limit (about 5 minutes in all, 7 at most) and its log under $OUT; a step that fails or runs out
# of time is said in $OUT/steps.log and the next one runs.
# Usage (repo root as cwd): OUT=dir scripts/gpu-issue10.sh      DRY=1: the same on the CPU
# through the Triton interpreter with tiny shapes (to try the script off the GPU).
set -euo pipefail
out=${OUT:-reports/issue10}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if [ "${DRY:-0}" = 1 ]; then
  export TRITON_INTERPRET=1
  dry=(--dry) device=cpu graph=() shapes=(--shape 4x4099) budget=smoke scale=4
else
  unset TRITON_INTERPRET
  dry=() device=cuda graph=(--cuda-graph) shapes=() budget=standard scale=1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 || true
fi
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__,
      torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu')" | tee "$out/steps.log"

step() {   # step NAME SECONDS COMMAND...: run with a time limit, log to $out/NAME.log
  local name=$1 limit=$(( $2 * scale )) start rc=0
  shift 2
  start=$(date +%s)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1 || rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - start )) s (limit $limit s)" | tee -a "$out/steps.log"
}

step a-sweep-exact 130 python3 scripts/sweep_race.py "${dry[@]}" --kernel exact --budget-s 80
step b-sweep-inverse-cdf 80 python3 scripts/sweep_race.py "${dry[@]}" --kernel inverse-cdf --budget-s 45
step c-bench 50 python3 -m harness.cli bench sample --device "$device" "${graph[@]}" \
  --kernel triton-exact --kernel kernels.sample.triton_inverse_cdf:inverse_cdf "${shapes[@]}" --report-dir "$out/bench"
step d-pytest 90 python3 -m pytest tests/test_triton_race.py tests/test_triton_inverse_cdf.py -q
step e-check-standard 90 python3 -m harness.cli check sample --kernel kernels.sample.triton_inverse_cdf:inverse_cdf \
  --device "$device" --budget "$budget" --report-dir "$out/check"
rm -f "$out"/check/report.html   # summary.md and report.json carry the verdicts
for f in a-sweep-exact b-sweep-inverse-cdf; do
  echo; echo "== $f (best ten, then the other shapes)"; sed -n '/^best ten/,$p' "$out/$f.log"
done
echo; echo "== c-bench"; cat "$out/bench/bench.md" 2>/dev/null || tail -5 "$out/c-bench.log"
echo; echo "== d-pytest"; tail -3 "$out/d-pytest.log"
echo; echo "== e-check-standard"; grep '^\[\|PASS\|FAIL' "$out/e-check-standard.log" || tail -5 "$out/e-check-standard.log"
echo; cat "$out/steps.log"
