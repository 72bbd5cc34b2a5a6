#!/usr/bin/env bash
# One device call (nvidia-h200, about 330 s), from the repository root: `check all` at its
# defaults after the select's overflow change and the re-keyed precompile list, standard
# cold then quick cold, one after the other on one GPU (scripts/gpu/standard_at_defaults.sh);
# the two archives come back in $OUT.
set -u
R=${OUT:-/tmp/out}
T0=$(date +%s)
OUT=/tmp/std SIDE="standard:cold" bash scripts/gpu/standard_at_defaults.sh
cp /tmp/std/defaults.tgz "$R/standard.tgz"
echo "== standard done at $(( $(date +%s) - T0 )) s"
OUT=/tmp/qk NO_INSTALL=1 SIDE="quick:cold" bash scripts/gpu/standard_at_defaults.sh
cp /tmp/qk/defaults.tgz "$R/quick.tgz"
echo "== quick done at $(( $(date +%s) - T0 )) s"
