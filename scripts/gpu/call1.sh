#!/usr/bin/env bash
# One device call (nvidia-h200, about 300 s), from the repository root:
#   (1) the fallback's x_(k) search on the GPU: tests/test_row_kth_key.py and the CUDA tests
#       of tests/test_sample_logits_kernels.py, then `check sample-logits --kernel
#       triton-sample-logits --budget quick`;
#   (2) triton-tree-rejection's split G at 64x16x151936 under graph replay and eager: listed
#       under --launch programs_per_sm=2,4,8,16, drawn under resident_per_sm=1,2,4,8,16
#       (G is a runtime int: no compile; bench checks each setting's outputs equal to the
#       default's).
# Each stage under `timeout`; logs under $OUT.
set -u
source scripts/gpu-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
START=$(date +%s)
section() { echo; echo "=== $1 (t = $(( $(date +%s) - START )) s) ==="; }
section environment
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "commit $(cat COMMIT 2>/dev/null)"

section "(2) tree sweep, graph"
B=(python3 -m sampling_harness bench tree-rejection --device cuda --repeat 2 --calls 30 --ceiling)
timeout 100 "${B[@]}" --shape 64x16x151936:listed --cuda-graph \
  --launch programs_per_sm=2,4,8,16 --report-dir "$OUT/listed-graph" 2>&1 | tail -14
timeout 100 "${B[@]}" --shape 64x16x151936:drawn --cuda-graph \
  --launch resident_per_sm=1,2,4,8,16 --report-dir "$OUT/drawn-graph" 2>&1 | tail -14
section "(2) tree sweep, eager"
timeout 60 "${B[@]}" --shape 64x16x151936:listed --launch programs_per_sm=2,4,8,16 \
  --report-dir "$OUT/listed-eager" 2>&1 | tail -14
timeout 60 "${B[@]}" --shape 64x16x151936:drawn --launch resident_per_sm=1,2,4,8,16 \
  --report-dir "$OUT/drawn-eager" 2>&1 | tail -14

section "(1) x_(k) search tests"
timeout 150 python3 -m pytest -q -x tests/test_row_kth_key.py tests/test_sample_logits_kernels.py \
  -p no:cacheprovider 2>&1 | tail -6
section "(1) check sample-logits quick"
timeout 150 python3 -m sampling_harness check sample-logits --kernel triton-sample-logits \
  --budget quick --report-dir "$OUT/sl-quick" 2>&1 | tail -16
section done
