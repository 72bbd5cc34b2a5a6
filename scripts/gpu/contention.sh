#!/usr/bin/env bash
# One-off (issue 52): what a check's calls cost on a GPU that 7 other processes keep busy,
# as the 8 workers of `check all` do, at the commit before the one-sync validation (.gpuwt,
# carried) and at this tree. Each case runs one check at quick, in-process; then the same
# with 7 hog processes (8 x 0.25 ms kernels, a sync, again) on the GPU; then a cProfile of
# this tree's marginal under the hogs. Usage: bash scripts/gpu/contention.sh
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh contention
export TRITON_CACHE_DIR=/tmp/tc-contention
here=$(pwd)
use() { (cd "$1" && pip install -q --no-index --no-deps --no-build-isolation -e . > /dev/null 2>&1); }
one() {  # NAME FAMILY KERNEL CHECK [PROFILE_FILE]
  local name=$1 family=$2 kernel=$3 check=$4 py=(python3)
  [ -z "${5:-}" ] || py=(python3 -m cProfile -o "$5")
  step "$name" 150 "${py[@]}" -m sampling_harness check "$family" --kernel "$kernel" \
    -k "$check" --budget quick --device cuda --isolation none --report-dir "$out/$name"
  python3 - "$out/$name/report.json" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1]))["checks"]:
    d = c["details"] or {}
    calls = d.get("kernel_calls") or 0
    print(f"  {c['kernel']} {c['check']}: {c['verdict']} {c['duration']:.1f} s, {calls} calls, "
          f"{1000 * c['duration'] / max(calls, 1):.1f} ms a call, kernel {d.get('kernel_seconds')}"
          f" s, guard {d.get('guard_seconds')} s")
PY
}
hogs() {
  rm -f /tmp/stop-hogs
  for _ in 1 2 3 4 5 6 7; do
    python3 -c '
import os, torch
x = torch.empty(2**27, device="cuda").uniform_()
while not os.path.exists("/tmp/stop-hogs"):
    for _ in range(8):
        x.mul_(1.0000001)
    torch.cuda.synchronize()
' &
  done
  sleep 5
}
cases() {  # TAG
  use .gpuwt
  one "$1-old-marginal" rejection triton-rejection marginal
  one "$1-old-sample" sample triton-exact fit_large_vocab
  use "$here"
  one "$1-new-marginal" rejection triton-rejection marginal
  one "$1-new-sample" sample triton-exact fit_large_vocab
}
use "$here"
one warm rejection triton-rejection "marginal or fit_large_vocab"
one warm-sample sample triton-exact fit_large_vocab
cases alone
hogs
cases busy
one busy-profile rejection triton-rejection marginal "$out/busy.prof"
touch /tmp/stop-hogs; wait
python3 -c "
import pstats; pstats.Stats('$out/busy.prof').sort_stats('tottime').print_stats(25)" \
  > "$out/profile.txt" 2>&1
head -60 "$out/profile.txt"
pack
