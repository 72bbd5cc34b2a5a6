#!/usr/bin/env bash
# `sampling-harness mutate` at --budget quick on the GPU for every Triton kernel of the project
# (the registered kernels under test whose reachable source holds @triton.jit code: today
# triton-exact and triton-inverse-cdf of sample, triton-logits-processors, triton-logprobs,
# triton-rejection, triton-sample-logits, triton-tree-rejection), N random mutants each
# (default 8: one wave of the 8 workers a 16-core host runs; mutant seed: the harness seed;
# ALL=1: every site, `--all`).
# For each kernel it prints the score table (mutants, killed / gap / equivalent / dead /
# stillborn / error, the score killed / (killed + gap) with its 95 % interval, seconds), the
# table per operator, each gap, the original's line (checks, seconds, kernel calls) and the
# kernel's exit code and seconds; then the total. Reports (summary.md per kernel: the table
# docs/measurements/ takes; report.html with the source view) under /tmp/mutate/KERNEL/,
# packed into one archive, $OUT/mutate.tar.gz, with the printed lines in $OUT/mutate.txt (a
# device call brings back at most 8 files).
# GPUS="0 1 2 3" spreads the kernels over those GPUs, in the order listed, one queue per GPU
# running at once (each kernel on its own GPU, WORKERS mutants at a time, default 8); without
# it every kernel runs on the GPUs torch sees, one after another.
# In each queue a kernel gets an equal share of what is left of DEADLINE (default 450 s; time
# a kernel leaves unused goes to the next); a kernel stopped at its share (exit 124) keeps
# the report of the mutants that finished (SIGINT at its share, SIGKILL 20 s later). A queue's
# lines go out as they come, each led by its GPU.
# Measured on a cold H100 (Triton cache empty), 16 mutants: triton-exact 58 s, triton-
# inverse-cdf 67 s; the originals of triton-logprobs, triton-rejection and triton-sample-
# logits (many compiled variants each) did not finish their quick checks within 70 s. If
# their share runs out, run them alone:
#   KERNELS="triton-logprobs triton-rejection triton-sample-logits" DEADLINE=540 scripts/gpu/mutate.sh
# Usage: [N=8 | ALL=1] [KERNELS="triton-exact triton-rejection"] [GPUS="0 1"] [DEADLINE=450]
#        scripts/gpu/mutate.sh
set -u
cd "$(dirname "$0")/../.."
start=$(date +%s)        # the deadline counts from here: the install and listing are in it
source scripts/gpu-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
out=/tmp/mutate; rm -rf "$out"; mkdir -p "$out"
exec > >(tee "$OUT/mutate.txt") 2>&1
n=${N:-8}
deadline=${DEADLINE:-450}
python3 -c "import torch, triton; print(torch.cuda.get_device_name(), 'torch', torch.__version__, 'triton', triton.__version__)"
git log -1 --format='commit %h %s' 2>/dev/null || true

# "family kernel" of every registered kernel under test with @triton.jit code in reach
mapfile -t pairs < <(python3 - "${KERNELS:-}" <<'PY'
import sys
from sampling_harness.families import FAMILIES
from sampling_harness.families.registry import entries
from sampling_harness.mutate.reach import reach

wanted = sys.argv[1].split()
found = []
for family in FAMILIES:
    for name, entry in entries(family).items():
        if entry.role != "kernel" or (wanted and name not in wanted):
            continue
        try:
            sites = reach(entry.load()).sites()
        except Exception as exc:          # a kernel mutate cannot read: say so, go on
            print(f"# {family} {name}: {exc}", file=sys.stderr)
            continue
        if any(site.jit for site in sites):
            found.append((family, name))
for family, name in sorted(found, key=lambda f: wanted.index(f[1]) if wanted else 0):
    print(family, name)      # in the order KERNELS lists them
PY
)
echo "kernels: ${#pairs[@]}: ${pairs[*]}"
choice=(--mutants "$n"); [ -n "${ALL:-}" ] && choice=(--all)
queue() {  # GPU "family kernel"...: the kernels one after another (GPU "": all GPUs)
  local gpu=$1; shift
  local left=$# pair family kernel remaining share t0 code
  for pair in "$@"; do
    read -r family kernel <<< "$pair"
    remaining=$(( deadline - ($(date +%s) - start) ))
    share=$(( remaining / left )); left=$(( left - 1 ))
    if [ "$share" -lt 30 ]; then echo "== $kernel: skipped (deadline)"; continue; fi
    echo "== $family / $kernel: ${choice[*]} at quick (GPU ${gpu:-all}, limit $share s)"
    t0=$(date +%s)
    env ${gpu:+CUDA_VISIBLE_DEVICES=$gpu} timeout -s INT -k 20 "$share" python3 -m sampling_harness \
      mutate "$family" --kernel "$kernel" --budget quick --device cuda "${choice[@]}" \
      ${gpu:+--workers-per-gpu ${WORKERS:-8}} --report-dir "$out/$kernel" > "$out/$kernel.log" 2>&1
    code=$?
    grep -v "^\[\|^original:\|^mutate " "$out/$kernel.log" | grep -v "^$" | sed 's/^/    /'
    grep "^original:" "$out/$kernel.log" | tail -1 | sed 's/^/    /'
    echo "== $kernel: exit $code in $(( $(date +%s) - t0 )) s"
  done
}
read -ra gpus <<< "${GPUS:-}"
if [ "${#gpus[@]}" -gt 0 ]; then
  for g in "${!gpus[@]}"; do
    mine=()
    for i in "${!pairs[@]}"; do
      [ $(( i % ${#gpus[@]} )) -eq "$g" ] && mine+=("${pairs[$i]}")
    done
    queue "${gpus[$g]}" "${mine[@]}" 2>&1 | sed "s/^/[GPU ${gpus[$g]}] /" &
  done
  wait
else
  queue "" "${pairs[@]}"
fi
echo "total: $(( $(date +%s) - start )) s"
tar -czf "$OUT/mutate.tar.gz" -C /tmp mutate
