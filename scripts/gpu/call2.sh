#!/usr/bin/env bash
# One device call (nvidia-h200-x2, about 200 s): sample-logits' precompile entries recorded
# again after the fallback's search changed (scripts/gpu/record_precompile.sh, quick on GPU 0
# and standard on GPU 1 at once); the new list and the archive come back in $OUT.
set -u
R=${OUT:-/tmp/out}
OUT=/tmp/rec FAMILY=sample-logits QUICK_GPU=0 STANDARD_GPU=1 DEADLINE=400 \
  bash scripts/gpu/record_precompile.sh
cp /tmp/rec/record.tgz /tmp/record/compile_variants.json "$R/"
