# FlashInfer's samplers as peers of sample, sample-logits and rejection, on a GPU machine
# without network (kernels/peers/flashinfer_sampling.py). Two modes, from the repository root:
#
#   bash scripts/gpu/flashinfer.sh wheels [FLASHINFER_WHEEL]   # here, with PyPI: fill .whl/
#   bash scripts/gpu/flashinfer.sh                             # there: install, warm, run
#
# `wheels` fills .whl/ (ignored: carry it) with a trimmed flashinfer-python 0.7.2.post1 and
# the dependencies its import and its sampling JIT build need, for CPython 3.12 manylinux
# x86_64. The trimmed wheel keeps the Python package (less the .cu/.cuh sources of other
# JIT modules), data/include, data/cccl and data/spdlog whole, and of data/csrc the sources
# the sampling JIT spec names (flashinfer/jit/sampling.py) with every file they include;
# data/cutlass and the rest of data/csrc (attention, gemm, moe: some 300 MB) go. RECORD
# is rewritten to the files kept. Left out of the dependencies, as `import flashinfer` and
# its sampling functions do not import them: cuda-python, nccl-extensions, nccl4py,
# nvidia-cudnn-frontend, nvidia-cutlass-dsl (the image has torch, numpy, triton, scipy,
# pandas, tqdm, packaging, filelock, jinja2).
#
# The GPU mode installs .whl/*.whl into /tmp/site (PYTHONPATH, its bin/ on PATH for
# ninja), sets CUDA_HOME from `which nvcc` and FLASHINFER_CUDA_ARCH_LIST=9.0, then runs the
# stages in ONLY (default "warm checks bench"), each a step of scripts/gpu/steps.sh under its
# DEADLINE (default 540 s; split the stages over calls on one GPU):
#   warm    import flashinfer, JIT-build its sampling module and call each adapter once
#           (the seconds printed; the build lands in FLASHINFER_WORKSPACE_BASE, default
#           /tmp/flashinfer-jit, kept while the machine is)
#   checks  `check FAMILY --kernel PEER --budget $BUDGET (standard) --device cuda` for the
#           three peers, each on its own GPU when several are visible, else one after another
#   bench   the bench tables of every family (FAMILIES) with --cuda-graph, the peers in
#           theirs (each row's ratio to the peer), `--repeat 2 --calls 20`
# Everything lands in /tmp/flashinfer (logs, reports), packed into $OUT/flashinfer.tgz.
set -u
WHEEL_DIR=${WHEEL_DIR:-.whl}    # a rehearsal elsewhere: WHEEL_DIR=DIR
FLASHINFER=flashinfer-python==0.7.2.post1
DEPS="apache-tvm-ffi==0.1.15.post2 cuda-tile==1.7.0 einops==0.8.2 ninja==1.13.2
nvidia-ml-py==13.615.71 tabulate==0.10.0 click==8.4.0 requests==2.34.2 urllib3 idna certifi
charset-normalizer"

if [ "${1:-}" = wheels ]; then
  set -e
  mkdir -p "$WHEEL_DIR"
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  source=${2:-}
  if [ -z "$source" ]; then
    python3 -m pip download -q --no-deps --only-binary=:all: -d /tmp/flashinfer-full "$FLASHINFER"
    source=$(ls /tmp/flashinfer-full/flashinfer_python-*.whl)
  fi
  rm -f "$WHEEL_DIR"/*.whl
  python3 - "$source" "$WHEEL_DIR" <<'PY'
import re, sys, zipfile
from pathlib import PurePosixPath as P

source, out_dir = sys.argv[1], sys.argv[2]
wheel = zipfile.ZipFile(source)
names = set(wheel.namelist())
data = "flashinfer/data/"
spec = wheel.read("flashinfer/jit/sampling.py").decode()
todo = [data + "csrc/" + s for s in re.findall(r'FLASHINFER_CSRC_DIR\s*/\s*"([^"]+)"', spec)]
assert todo and all(t in names for t in todo), todo
# include search order of flashinfer/jit/cpp_ext.py: cccl first, then include, csrc,
# cutlass, spdlog (tvm-ffi's and CUDA's own headers are outside the wheel)
dirs = [data + d for d in ("cccl/cub", "cccl/libcudacxx/include", "cccl/thrust", "include",
                           "csrc", "cutlass/include", "cutlass/tools/util/include",
                           "spdlog/include")]
include = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
reached = set()
while todo:
    path = todo.pop()
    if path in reached:
        continue
    reached.add(path)
    for kind, name in include.findall(wheel.read(path).decode(errors="replace")):
        here = [str(P(path).parent / name)] if kind == '"' else []
        hit = next((c for c in here + [f"{d}/{name}" for d in dirs]
                    if c in names), None)
        if hit is not None:
            todo.append(str(P(hit)))
csrc = sorted(p for p in reached if p.startswith(data + "csrc/"))
assert not [p for p in reached if p.startswith(data + "cutlass/")], "cutlass is included"
whole = tuple(data + d for d in ("include/", "cccl/", "spdlog/"))

def keep(name):
    if name.startswith(data):
        return name.startswith(whole) or name in csrc or "/" not in name[len(data):]
    return not name.endswith((".cu", ".cuh"))

kept = [i for i in wheel.infolist() if keep(i.filename)]
record = next(i.filename for i in kept if i.filename.endswith(".dist-info/RECORD"))
names_kept = {i.filename for i in kept}
rows = [r for r in wheel.read(record).decode().splitlines()
        if r and r.split(",")[0] in names_kept]
target = f"{out_dir}/{P(source).name}"
with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
    for info in kept:
        body = "\n".join(rows).encode() + b"\n" if info.filename == record \
            else wheel.read(info.filename)
        out.writestr(info, body, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
print(f"{target}: {len(kept)} of {len(names)} files; data/csrc kept: "
      f"{', '.join(p[len(data) + 5:] for p in csrc)}")
PY
  # shellcheck disable=SC2086  # one word a requirement
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$WHEEL_DIR" $DEPS
  ls -l "$WHEEL_DIR"
  du -cb "$WHEEL_DIR"/*.whl | tail -1 | awk '{printf "total %.1f MiB\n", $1 / 1048576}'
  exit 0
fi

source scripts/gpu/steps.sh flashinfer
ls "$WHEEL_DIR"/*.whl >/dev/null 2>&1 || { echo "no wheels in $WHEEL_DIR: carry .whl" \
  "(made by: bash scripts/gpu/flashinfer.sh wheels)"; exit 2; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site "$WHEEL_DIR"/*.whl > "$out/pip-install.log" 2>&1 \
  || { cat "$out/pip-install.log"; exit 2; }
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH
CUDA_HOME=$(dirname "$(dirname "$(which nvcc)")"); export CUDA_HOME
export FLASHINFER_CUDA_ARCH_LIST=9.0 MAX_JOBS=${MAX_JOBS:-$(nproc)}
export FLASHINFER_WORKSPACE_BASE=${FLASHINFER_WORKSPACE_BASE:-/tmp/flashinfer-jit}
echo "CUDA_HOME=$CUDA_HOME nvcc $(nvcc --version | grep -o 'release [0-9.]*')" \
  "ninja $(ninja --version) wheels: $(cd "$WHEEL_DIR" && ls | tr '\n' ' ')"
ONLY=${ONLY:-warm checks bench}
BUDGET=${BUDGET:-standard}

if [[ " $ONLY " == *" warm "* ]]; then
  step warm 480 python3 - <<'PY'
import time
import torch

start = time.perf_counter()
import flashinfer  # noqa: E402

print(f"import flashinfer {flashinfer.__version__}: {time.perf_counter() - start:.1f} s")
from sampling_harness.families import FAMILIES  # noqa: E402
from sampling_harness.families.registry import entries  # noqa: E402
from sampling_harness.kernels.peers import flashinfer_sampling as peers  # noqa: E402

print("registered:", [n for f in FAMILIES for n, e in entries(f).items() if e.peer])
cuda = torch.device("cuda")
probs = torch.softmax(torch.randn(8, 4099, device=cuda), 1)
logits = torch.randn(8, 4099, device=cuda)
t, k, p = (torch.full((8,), v, device=cuda) for v in (0.8, 50, 0.9))
drafts = torch.multinomial(probs[:6], 1)[:, 0]
calls = {"flashinfer_sample (JIT build of the sampling module)":
             lambda: peers.flashinfer_sample(probs.clone(), 1),
         "flashinfer_sample_logits": lambda: peers.flashinfer_sample_logits(
             logits.clone(), t, k.long(), p, 1),
         "flashinfer_rejection": lambda: peers.flashinfer_rejection(
             drafts, [2, 0, 3, 1], probs[:6], probs[2:8], torch.arange(4, device=cuda),
             torch.tensor([False, False, True, False], device=cuda), 1)}
for name, call in calls.items():
    start = time.perf_counter()
    out = call()
    torch.cuda.synchronize()
    print(f"{name}: {time.perf_counter() - start:.1f} s, {tuple(out.shape)} {out.dtype}")
PY
fi

if [[ " $ONLY " == *" checks "* ]]; then
  gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
  i=0
  for pair in sample:flashinfer-sampling sample-logits:flashinfer-top-k-top-p \
              rejection:flashinfer-chain; do
    family=${pair%%:*} kernel=${pair#*:}
    args=(python3 -m sampling_harness check "$family" --kernel "$kernel" --budget "$BUDGET"
          --device cuda --report-dir "$out/check-$family")
    if [ "$gpus" -gt 1 ]; then    # one GPU each, side by side; their lines after all end
      CUDA_VISIBLE_DEVICES=$(( i % gpus )) step "check-$family" 480 "${args[@]}" \
        > "$out/check-$family.step" 2>&1 &
    else
      step "check-$family" 480 "${args[@]}"
    fi
    i=$(( i + 1 ))
  done
  wait
  [ "$gpus" -gt 1 ] && cat "$out"/check-*.step
fi

if [[ " $ONLY " == *" bench "* ]]; then     # every family's table, the peers in theirs
  for family in ${FAMILIES:-sample sample-logits rejection logprobs draft-probs \
                 logits-processors tree-rejection}; do
    STEP_TAIL=30 bench "bench-$family" 150 "$family" --repeat 2 --calls 20
  done
fi
pack
echo "logs and reports: $OUT/$run.tgz"
