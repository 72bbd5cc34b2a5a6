#!/usr/bin/env bash
# One device call (nvidia-h200, about 150 s): triton-tree-rejection at 64x16x151936 under
# graph replay, its warps and pipeline stages swept at the default G (each setting a compile
# of its own; bench checks each setting's outputs equal to the default's).
set -u
source scripts/gpu-env.sh
B=(python3 -m sampling_harness bench tree-rejection --device cuda --repeat 2 --calls 30 --cuda-graph)
timeout 200 "${B[@]}" --shape 64x16x151936:listed --launch warps=4,8 --launch stages=3,4,5 \
  --report-dir /tmp/l 2>&1 | grep "triton-tree"
timeout 200 "${B[@]}" --shape 64x16x151936:drawn --launch warps=4,8 --launch stages=3,4,5 \
  --report-dir /tmp/d 2>&1 | grep "triton-tree"
