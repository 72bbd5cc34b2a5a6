#!/usr/bin/env bash
# triton-tree-rejection on a GPU machine, from the repository root with the project installed
# (pip install --no-index --no-deps --no-build-isolation -e .), in about 240 s:
#   (b) bench   `bench tree-rejection` at 64x16x151936 listed and drawn, under CUDA-graph
#               replay and eager (--repeat 2 --calls 30 --ceiling), run first, alone on the GPU
#   (a) ident   scripts/gpu/tree_identity.py: outputs bit-identical to the one-program kernel
#               of 4fbd46e (scripts/gpu/tree_rejection_4fbd46e.py) at 64x16x151936,
#               256x8x32000 and 1x16x151936 (bench inputs, listed and drawn, 5 int seeds and
#               2 per-request seed vectors each) and random trees at odd shapes (G = 1 .. 64)
#   (c) census  `check tree-rejection --budget quick --device cuda --no-precompile` with a
#               fresh TRITON_CACHE_DIR (CHECK_WORKERS workers, default 8: the compiles run in
#               parallel; CHECK_WORKERS=1 runs the plain command), then the compiled binaries
#               in that cache per kernel name, with each tree variant's shared memory
# (a) and (c) run side by side after (b) (their compiles are host work). Each stage runs
# under `timeout` within DEADLINE (default 235 s from the start): a hang (the drawn walk's
# programs wait for each other) shows as exit 124. Logs and reports under $OUT (default
# /tmp/tree_bench): bench-graph.txt, bench-eager.txt, identity.txt, check.txt, census.txt.
# ONLY picks stages (default "bench identity census"): a stage cut by its timeout can be run
# again alone, e.g. ONLY=census DEADLINE=540 bash scripts/gpu/tree_bench.sh. Stage "sweep"
# (not in the default, about 60 s): graph replay at 64x16x151936 under --launch
# programs_per_sm=2,4,8 (listed G) x resident_per_sm=1,2 (drawn G), each setting's outputs
# checked equal to the default's by bench itself (G never changes the draws; no compile).
# Usage: [OUT=dir] [DEADLINE=235] [CHECK_WORKERS=8] [ONLY="bench identity census"]
#        bash scripts/gpu/tree_bench.sh
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/tree_bench}
DEADLINE=${DEADLINE:-235}
CHECK_WORKERS=${CHECK_WORKERS:-8}
ONLY=" ${ONLY:-bench identity census} "
PY=${PYTHON:-python}
mkdir -p "$OUT"
START=$(date +%s)
WARM=${WARM:-/tmp/tree_bench_warm}                # (a), (b): kept for a rerun
mkdir -p "$WARM"
COLD=$(mktemp -d /tmp/tree_bench_cold.XXXXXX)     # (c): fresh
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
section() { echo; echo "=== $1 (t = $(( $(date +%s) - START )) s) ==="; }

section "environment"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
$PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
git log --oneline -1 2>/dev/null || true

if [[ $ONLY == *" bench "* ]]; then
  section "(b) bench 64x16x151936 listed and drawn: CUDA-graph replay"
  SHAPES=(--shape 64x16x151936:listed --shape 64x16x151936:drawn)
  TRITON_CACHE_DIR=$WARM timeout 100 $PY -m sampling_harness bench tree-rejection \
      --device cuda "${SHAPES[@]}" --cuda-graph --repeat 2 --calls 30 --ceiling \
      --report-dir "$OUT/bench-graph" 2>&1 | tee "$OUT/bench-graph.txt"
  echo "bench (graph) exit ${PIPESTATUS[0]}"
  section "(b) bench 64x16x151936 listed and drawn: eager"
  TRITON_CACHE_DIR=$WARM timeout 45 $PY -m sampling_harness bench tree-rejection \
      --device cuda "${SHAPES[@]}" --repeat 2 --calls 30 --ceiling \
      --report-dir "$OUT/bench-eager" 2>&1 | tee "$OUT/bench-eager.txt"
  echo "bench (eager) exit ${PIPESTATUS[0]}"
fi

if [[ $ONLY == *" sweep "* ]]; then
  section "sweep: the split G under --launch, graph replay (outputs equal the default's)"
  TRITON_CACHE_DIR=$WARM timeout 120 $PY -m sampling_harness bench tree-rejection \
      --device cuda --shape 64x16x151936:listed --shape 64x16x151936:drawn --cuda-graph \
      --repeat 1 --calls 20 --ceiling --launch programs_per_sm=2,4,8 \
      --launch resident_per_sm=1,2 --report-dir "$OUT/bench-sweep" 2>&1 \
      | tee "$OUT/bench-sweep.txt"
  echo "bench (sweep) exit ${PIPESTATUS[0]}"
fi

T=$(left)
CHECK=
$PY -c "import xdist" 2>/dev/null || CHECK_WORKERS=1     # pytest-xdist: the workers
if [[ $ONLY == *" census "* ]]; then
  section "(c) check tree-rejection --budget quick, cold cache, $CHECK_WORKERS workers: started"
  CHECK_START=$(date +%s)
  ( TRITON_CACHE_DIR=$COLD timeout $(( T - 8 )) $PY -m sampling_harness check tree-rejection \
        --budget quick --device cuda --no-precompile --workers-per-gpu "$CHECK_WORKERS" \
        --report-dir "$OUT/check" > "$OUT/check.txt" 2>&1
    echo "check exit $? after $(( $(date +%s) - CHECK_START )) s" >> "$OUT/check.txt" ) &
  CHECK=$!
fi
if [[ $ONLY == *" identity "* ]]; then
  section "(a) identity with 4fbd46e's one-program kernel"
  TRITON_CACHE_DIR=$WARM timeout $(( T - 10 )) $PY scripts/gpu/tree_identity.py \
      --device cuda 2>&1 | tee "$OUT/identity.txt"
  echo "identity exit ${PIPESTATUS[0]}"
fi
if [[ -z $CHECK ]]; then
  echo; echo "total $(( $(date +%s) - START )) s"
  rm -rf "$COLD"
  exit 0
fi
wait "$CHECK"
section "(c) check tree-rejection --budget quick (cold cache, $CHECK_WORKERS workers)"
tail -40 "$OUT/check.txt"

section "(c) compiled variants in the fresh cache, per kernel"
$PY - "$COLD" <<'EOF' 2>&1 | tee "$OUT/census.txt"
import collections, json, pathlib, sys
root = pathlib.Path(sys.argv[1])
count = collections.Counter()
tree = []
for binary in sorted(root.rglob("*.cubin")):
    count[binary.stem] += 1
    meta = binary.with_suffix(".json")
    if binary.stem == "_tree_kernel" and meta.exists():
        info = json.loads(meta.read_text())
        tree.append((binary.parent.name[:12], info.get("shared"), info.get("num_warps")))
for name, n in sorted(count.items()):
    print(f"{n:4d}  {name}")
print(f"{sum(count.values()):4d}  in all")
for row in tree:
    print("  _tree_kernel %s: shared %s bytes, %s warps" % row)
EOF
echo "(the tree kernel is _tree_kernel; 4fbd46e's one-program kernel had 11 variants)"
echo "total $(( $(date +%s) - START )) s"
rm -rf "$COLD"
