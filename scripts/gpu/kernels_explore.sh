#!/usr/bin/env bash
# Issue 38, first exploration on one H100 (about 7 minutes): which launch settings and
# variants of the four Triton families to keep, where the time of an eager call goes, and
# the bench tables as they stand.
#   1. benchmarks/explore_kernels.py --sass: candidate settings, graph and eager ms, % of the
#      read ceiling, output = default, SASS opcode counts (logprobs count/lse variants,
#      rejection splits and pipeline stages under the new floor, sample-logits group block)
#   2. benchmarks/explore_kernels.py --profile: device us of each kernel of a call
#   3. benchmarks/host_cost.py --profile: host us of the whole call, of each launch through
#      Triton, directly, directly with int pointers; torch's small costs; cProfile
#   4. sampling-harness bench FAMILY --cuda-graph --ceiling at 256x151936, 32x128256,
#      1x32000 (2 repeats of 30 calls) for sample, logprobs, sample-logits, rejection, and
#      sample-logits flat-top-p (top-p 0.99 alone) against the sort path
# Every step runs under a deadline (the script stops starting steps after DEADLINE s,
# default 400); logs and bench.json files go to $OUT. Usage: scripts/gpu/kernels_explore.sh
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
source scripts/gpu-env.sh
start=$(date +%s)
deadline=${DEADLINE:-400}
source scripts/gpu/steps.sh
git log -1 --format='commit %h %s' 2>/dev/null || true

step explore 170 python3 benchmarks/explore_kernels.py --sass --calls 20
step profile 45 python3 benchmarks/explore_kernels.py --profile
step host 60 python3 benchmarks/host_cost.py --profile
bench() {  # NAME FAMILY ARGS...
  local name=$1 family=$2; shift 2
  step "$name" 75 python3 -m sampling_harness bench "$family" --device cuda --cuda-graph \
    --repeat 2 --calls 30 --report-dir "$out/$name" "$@"
}
bench bench-sample-logits sample-logits --ceiling
bench bench-rejection rejection --ceiling --shape 256x4x151936 --shape 32x4x128256 \
  --shape 1x4x32000
bench bench-logprobs logprobs --ceiling --shape 256x151936x21 --shape 32x128256x21 \
  --shape 1x32000x21
bench bench-sample sample --ceiling
bench bench-flat-top-p sample-logits --shape 256x151936:flat-top-p
echo "total $(( $(date +%s) - start )) s"
