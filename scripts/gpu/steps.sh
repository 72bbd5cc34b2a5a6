# Sourced by the GPU scripts after they set $out, $start and $deadline: each step runs under
# min(its limit, the time left before the deadline), its log in $out/NAME.log, its last
# $STEP_TAIL lines (default 80) printed, then its exit code and seconds.
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
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, \
torch.cuda.get_device_name())"
