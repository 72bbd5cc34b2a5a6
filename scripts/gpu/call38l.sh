#!/usr/bin/env bash
# Issue 38: top-p alone after the fallback's search closes rows whose range holds no key;
# then the precompile list's sample-logits variants recorded again (scripts/gpu/record38.sh:
# cold `check sample-logits` at quick and standard, which also checks the change).
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call38l
STEP_TAIL=12 bench top-p 90 sample-logits --repeat 2 --calls 10 \
  --kernel triton-sample-logits --shape 256x151936:flat-top-p --shape 256x151936:top-p \
  --shape 256x151936
pack
DEADLINE=$(( deadline - ($(date +%s) - start) )) NO_INSTALL=1 bash scripts/gpu/record38.sh
