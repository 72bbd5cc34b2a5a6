#!/usr/bin/env bash
# triton-sample-logits on a GPU in two device calls (each under 10 minutes):
#   part 1: the kernel unit tests (sync-free and CUDA-graph test included), the benchmark
#           (eager and graph replay; the default shapes, then each filter variant at
#           256 x 151936) and the host cost of one call;
#   part 2: `check sample-logits --kernel triton-sample-logits` at the standard budget, then
#           the three-path fuzz (Triton compiles each new shape, so few examples).
#   part 3: the tests of part 1, then the check of part 2;
#   part 4: the tests, the fuzz and both benchmarks.
# Usage: scripts/gpu-sample-logits.sh 1|2|3|4 [OUTDIR]   (default OUTDIR: $OUT or reports/gpu)
set -u
part=${1:?usage: scripts/gpu-sample-logits.sh 1|2 [OUTDIR]}
out=${2:-${OUT:-reports/gpu}}/sample-logits-$part
mkdir -p "$out"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || python3 -m pip install -q --no-index --no-deps --no-build-isolation -e .
step() {  # step NAME SECONDS COMMAND...: a timed step, its log under $out
  local name=$1 limit=$2; shift 2
  local start=$(date +%s)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - start )) s"
  tail -n 25 "$out/$name.log"
}
if [ "$part" = 1 ]; then
  step tests 240 python3 -m pytest -q tests/test_sample_logits_kernels.py --durations 8
  step bench 80 python3 -m harness.cli bench sample-logits --device cuda \
    --report-dir "$out/bench"
  step bench-graph 120 python3 -m harness.cli bench sample-logits --device cuda --cuda-graph \
    --shape 256x151936 --shape 256x151936:top-p --shape 256x151936:plain \
    --shape 256x151936:greedy --shape 32x128256 --shape 1x32000 --report-dir "$out/bench-graph"
  PYTHONPATH=. step host-cost 40 python3 scripts/host_cost_sample_logits.py 256,151936
elif [ "$part" = 2 ]; then
  step check 400 python3 -m harness.cli check sample-logits --kernel triton-sample-logits \
    --device cuda --budget standard --report-dir "$out/check"
  step fuzz 150 python3 scripts/fuzz_sample_logits.py --examples 25 --seed 1
elif [ "$part" = 3 ]; then            # tests, then the check, in one call
  step tests 240 python3 -m pytest -q tests/test_sample_logits_kernels.py --durations 8
  step check 330 python3 -m harness.cli check sample-logits --kernel triton-sample-logits \
    --device cuda --budget standard --report-dir "$out/check"
else                                  # part 4: the tests, the fuzz, and both benchmarks
  step tests 200 python3 -m pytest -q tests/test_sample_logits_kernels.py
  step fuzz 150 python3 scripts/fuzz_sample_logits.py --examples 25 --seed 1
  step bench 70 python3 -m harness.cli bench sample-logits --device cuda \
    --report-dir "$out/bench"
  step bench-graph 120 python3 -m harness.cli bench sample-logits --device cuda --cuda-graph \
    --shape 256x151936 --shape 256x151936:top-p --shape 256x151936:plain \
    --shape 256x151936:greedy --shape 32x128256 --shape 1x32000 --report-dir "$out/bench-graph"
fi
