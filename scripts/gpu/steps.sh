# Sourced by the GPU scripts from the repository root. `source scripts/gpu/steps.sh RUN`
# sets up a run: the environment (scripts/gpu-env.sh), $OUT (default /tmp/out) made, a fresh
# /tmp/RUN as $out, the clock ($start) and $deadline (DEADLINE, default 540 s); without RUN
# the caller has set $out, $start and $deadline. Each `step` then runs under min(its limit,
# the time left before the deadline), its log in $out/NAME.log, its last $STEP_TAIL lines
# (default 80) printed, then its exit code and seconds. `bench NAME MAX FAMILY ARGS...` is
# a step of `sampling-harness bench FAMILY` on the GPU with CUDA-graph replay, its reports in
# $out/NAME; `bench_top_p NAME MAX ARGS...` benches the two top-p-alone shapes,
# `issue_tables` issue 38's tables; `pack` archives $out into $OUT/RUN.tgz (a device call brings back at most 8
# files); `mutate_left KERNELS...` runs scripts/gpu/mutate.sh in what is left. With RUN, the
# checkout's commit is printed first.
if [ -n "${1:-}" ]; then
  start=$(date +%s)                  # the install below counts against the deadline
  source scripts/gpu-env.sh
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
  run=$1; out=/tmp/$1; rm -rf "$out"; mkdir -p "$out"
  deadline=${DEADLINE:-540}
fi
step() {  # NAME MAX_SECONDS COMMAND...
  local name=$1 most=$2 left t0 code; shift 2
  left=$(( deadline - ($(date +%s) - start) ))
  if [ "$left" -lt 10 ]; then echo "== $name: skipped (deadline)"; return; fi
  [ "$most" -lt "$left" ] || most=$left
  echo "== $name (at $(( $(date +%s) - start )) s, limit $most s)"
  t0=$(date +%s)
  timeout "$most" "$@" > "$out/$name.log" 2>&1; code=$?
  grep -v "^USDT\|Warning\|warn(" "$out/$name.log" | tail -n "${STEP_TAIL:-80}"
  echo "== $name: exit $code in $(( $(date +%s) - t0 )) s"
}
bench() {  # NAME MAX FAMILY ARGS...
  local name=$1 most=$2 family=$3; shift 3
  step "$name" "$most" python3 -m sampling_harness bench "$family" --device cuda --cuda-graph \
    --report-dir "$out/$name" "$@"
}
pack() {  # $out as $OUT/RUN.tgz
  tar -czf "$OUT/$run.tgz" -C /tmp "$run"
}
bench_top_p() {  # NAME MAX ARGS...: sample-logits' top-p-alone shapes (flat-top-p, top-p at
  # 256 x 151936), `--repeat 2 --calls 10`
  local name=$1 most=$2; shift 2
  bench "$name" "$most" sample-logits --repeat 2 --calls 10 \
    --shape 256x151936:flat-top-p --shape 256x151936:top-p "$@"
}
issue_tables() {  # issue 38's bench tables at the defaults, one run each family
  # (--ceiling, 2 repeats of 30 calls; the reports in $out/bench-FAMILY)
  STEP_TAIL=40 bench bench-sample 45 sample --repeat 2 --calls 30 --ceiling
  STEP_TAIL=40 bench bench-logprobs 60 logprobs --repeat 2 --calls 30 --ceiling \
    --shape 256x151936x21:top --shape 256x151936x21:random --shape 32x128256x21:random \
    --shape 1x32000x21:random
  STEP_TAIL=40 bench bench-sample-logits 60 sample-logits --repeat 2 --calls 30 --ceiling
  STEP_TAIL=40 bench bench-rejection 60 rejection --repeat 2 --calls 30 --ceiling \
    --shape 256x4x151936 --shape 32x4x128256 --shape 1x4x32000
}
mutate_left() {  # KERNELS...: `mutate` at quick (N mutants, default 12) in what is left of
  # the deadline, less 15 s for the caller's archive; nothing when under a minute is left
  local left=$(( deadline - ($(date +%s) - start) - 15 ))
  [ "$left" -gt 60 ] && KERNELS="$*" N=${N:-12} DEADLINE=$left NO_INSTALL=1 \
    bash scripts/gpu/mutate.sh
}
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, \
torch.cuda.get_device_name())"
if [ -n "${1:-}" ]; then git log -1 --format='commit %h %s' 2>/dev/null || true; fi
