#!/usr/bin/env bash
# One device call (nvidia-h200-x4, about 500 s):
#   (1) tree-rejection's precompile entries recorded again (scripts/gpu/record_precompile.sh,
#       quick on GPU 0 and standard on GPU 1 at once), the new list put in place here;
#   (2) `check all --budget standard` at its defaults three times at once, cold, one a GPU
#       (scripts/gpu/standard_at_defaults.sh SIDE mode);
#   (3) `check all --budget quick` cold, alone on the host.
# Back in $OUT: compile_variants.json, record-tree.tgz, standard.tgz, quick.tgz.
set -u
R=${OUT:-/tmp/out}
T0=$(date +%s)
OUT=/tmp/rec FAMILY=tree-rejection QUICK_GPU=0 STANDARD_GPU=1 DEADLINE=240 \
  bash scripts/gpu/record_precompile.sh
cp /tmp/rec/record.tgz "$R/record-tree.tgz"
cp /tmp/record/compile_variants.json "$R/" && cp /tmp/record/compile_variants.json harness/scale/
echo "== (1) done at $(( $(date +%s) - T0 )) s"
OUT=/tmp/std NO_INSTALL=1 SIDE="standard:cold standard:cold standard:cold" \
  bash scripts/gpu/standard_at_defaults.sh
cp /tmp/std/defaults.tgz "$R/standard.tgz"
echo "== (2) done at $(( $(date +%s) - T0 )) s"
OUT=/tmp/qk NO_INSTALL=1 SIDE="quick:cold" bash scripts/gpu/standard_at_defaults.sh
cp /tmp/qk/defaults.tgz "$R/quick.tgz"
echo "== (3) done at $(( $(date +%s) - T0 )) s"
