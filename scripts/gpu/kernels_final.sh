#!/usr/bin/env bash
# Issue 38, second device call on one H100 (at most 7 minutes, DEADLINE=420 by default):
# (logprobs: default settings; the search=1 path was removed after it failed to compile on triton 3.6)
#      among the sorted keys and a histogram per element, kernels/logprobs/rank_search.py)
#      against the compare path (the default) with random and top ids, output = default
#      checked bit for bit; triton-rejection's new default (programs_per_sm=4) and 8 at
#      three shapes; triton-sample-logits default and group_block=4096
#   2. benchmarks/host_cost.py: host us of each eager call and of each launch
#   3. the bench tables (--cuda-graph --ceiling, 2 repeats of 30 calls): sample, logprobs
#      (top and random ids), rejection at 256x4x151936, 32x4x128256, 1x4x32000,
#      sample-logits (default shapes) and flat-top-p/top-p/plain against the sort path
#   4. pytest on the GPU of the changed kernels' unit tests (no interpreter)
#   5. check logprobs / rejection --budget standard on the changed kernels (longest, last)
# Every step runs under the deadline (a step starts only with 15 s left, and is cut at the
# time left); each prints its exit code and seconds. Logs and bench.json files go to $OUT.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
source scripts/gpu-env.sh
start=$(date +%s)
deadline=${DEADLINE:-420}
source scripts/gpu/steps.sh
git log -1 --format='commit %h %s' 2>/dev/null || true

step explore 110 python3 benchmarks/explore_kernels.py --calls 20
step host 40 python3 benchmarks/host_cost.py
bench() {  # NAME FAMILY ARGS...
  local name=$1 family=$2; shift 2
  step "$name" 45 python3 -m sampling_harness bench "$family" --device cuda --cuda-graph \
    --repeat 2 --calls 30 --report-dir "$out/$name" "$@"
}
bench bench-logprobs logprobs --ceiling --shape 256x151936x21:top \
  --shape 256x151936x21:random --shape 32x128256x21:random --shape 1x32000x21:random
bench bench-rejection rejection --ceiling --shape 256x4x151936 --shape 32x4x128256 \
  --shape 1x4x32000
bench bench-sample sample --ceiling
bench bench-sample-logits sample-logits --ceiling
bench bench-top-p sample-logits --shape 256x151936:flat-top-p --shape 256x151936:top-p \
  --shape 256x151936:plain
step pytest 60 python3 -m pytest -q -p no:cacheprovider -n 0 tests/test_triton_rejection.py \
  tests/test_triton_logprobs_split.py tests/test_logprobs_kernels.py
# the changed kernels' standard checks run in the final `check all --budget standard` call
echo "total $(( $(date +%s) - start )) s"
