#!/usr/bin/env bash
# One device call (nvidia-h200, about 400 s), from the repository root:
#   (1) the precompile list re-keyed after the select's overflow change
#       (scripts/gpu/rekey_precompile.py; the new list comes back in $OUT);
#   (2) triton-sample-logits on the GPU: tests/test_row_kth_key.py and
#       tests/test_sample_logits_kernels.py, then `check sample-logits --kernel
#       triton-sample-logits --budget quick` (cold, with the re-keyed list);
#   (3) the two fp32-noise-floor mutants' GPU path: `selftest sample|sample-logits --kernel
#       fp32-noise-floor --device cuda` (each at its own budget).
set -u
source scripts/gpu-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
START=$(date +%s)
section() { echo; echo "=== $1 (t = $(( $(date +%s) - START )) s) ==="; }
section environment
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "commit $(cat COMMIT 2>/dev/null)"
section "(1) re-key"
timeout 120 python3 scripts/gpu/rekey_precompile.py && cp harness/scale/compile_variants.json "$OUT/"
section "(2) tests"
timeout 200 python3 -m pytest -q -x tests/test_row_kth_key.py tests/test_sample_logits_kernels.py \
  -p no:cacheprovider 2>&1 | tail -4
section "(2) check sample-logits quick"
export TRITON_CACHE_DIR=/tmp/tc-quick
timeout 150 python3 -m sampling_harness check sample-logits --kernel triton-sample-logits \
  --budget quick --report-dir /tmp/r/sl-quick 2>&1 | tail -14
unset TRITON_CACHE_DIR
section "(3) fp32-noise-floor mutants"
timeout 150 python3 -m sampling_harness selftest sample --kernel fp32-noise-floor --device cuda \
  --report-dir /tmp/r/st-sample 2>&1 | tail -6
timeout 200 python3 -m sampling_harness selftest sample-logits --kernel fp32-noise-floor \
  --device cuda --report-dir /tmp/r/st-sl 2>&1 | tail -6
tar -czf "$OUT/reports.tgz" -C /tmp r 2>/dev/null
section done
