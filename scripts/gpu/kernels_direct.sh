#!/usr/bin/env bash
# Issue 38, step 3, on one H100 (at most 150 s, DEADLINE=150 by default): the direct
# launcher (kernels/direct_launch.py) in the Triton wrappers.
#   1. benchmarks/host_cost.py: host us of each eager call through the direct launcher and
#      through kernel[grid], how many launches took the direct path, whether the two calls'
#      outputs are equal bit for bit, and the per-launch figures as before
#   2. the bench tables (--cuda-graph, 2 repeats of 30 calls) of sample, logprobs,
#      rejection, sample-logits at the 256x151936-type shape, 32x128256 and 1x32000
#   3. pytest on the GPU (no interpreter, 40 s) of the launcher and the changed kernels
# Every step runs under the deadline (a step starts only with 10 s left, and is cut at the
# time left); each prints its exit code and seconds. Logs and bench.json files go to $OUT.
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu-env.sh
out=${OUT:-/tmp/out}
mkdir -p "$out"
start=$(date +%s)
deadline=${DEADLINE:-150}
source scripts/gpu/steps.sh

step host 40 python3 benchmarks/host_cost.py
bench() {  # NAME FAMILY ARGS...
  local name=$1 family=$2; shift 2
  step "$name" 20 python3 benchmarks/bench_direct.py "$family" --device cuda --cuda-graph \
    --repeat 2 --calls 30 --report-dir "$out/$name" "$@"
}
bench bench-sample sample --shape 256x151936 --shape 32x128256 --shape 1x32000
bench bench-logprobs logprobs --shape 256x151936x21:random --shape 32x128256x21:random \
  --shape 1x32000x21:random
bench bench-rejection rejection --shape 256x4x151936 --shape 32x4x128256 --shape 1x4x32000
bench bench-sample-logits sample-logits --shape 256x151936 --shape 32x128256 \
  --shape 1x32000
step pytest 40 python3 -m pytest -q -p no:cacheprovider -n 0 tests/test_direct_launch.py \
  tests/test_triton_race.py tests/test_triton_rejection.py tests/test_logprobs_kernels.py \
  tests/test_sample_logits_kernels.py
echo "total $(( $(date +%s) - start )) s"
