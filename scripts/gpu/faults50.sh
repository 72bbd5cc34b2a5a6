#!/usr/bin/env bash
# Issue 50 on the GPU. `bash scripts/gpu/faults50.sh faults`: the GPU faults beside a correct
# kernel (tests/test_faults_cuda.py), then check all --budget quick with the checks in
# isolated workers and without (the same 8 xdist workers either way: the cost of the fault
# machinery alone). `bash scripts/gpu/faults50.sh standard`: check all --budget standard.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
source scripts/gpu-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
git rev-parse --short HEAD >> "$out/gpu.txt"
timed() {   # name, command...: its output, exit code and wall seconds
    local name=$1; shift
    local t0=$(date +%s)
    "$@" > "$out/$name.log" 2>&1; local code=$?
    echo "$name exit $code in $(( $(date +%s) - t0 )) s" | tee -a "$out/times.txt"
}
case "${1:-faults}" in
faults)
    timed faults python3 -m pytest tests/test_faults_cuda.py -q -s -p no:cacheprovider
    timed quick_none python3 -m sampling_harness check all --budget quick --device cuda \
        --isolation none --report-dir "$out/quick_none"
    timed quick_worker python3 -m sampling_harness check all --budget quick --device cuda \
        --report-dir "$out/quick_worker"
    ;;
quick)      # again on a warm machine (the Triton cache filled): the cost of isolation alone
    timed quick_warmup python3 -m sampling_harness check all --budget quick --device cuda \
        --report-dir "$out/quick_warmup"
    for round in 1 2; do
        timed quick_none$round python3 -m sampling_harness check all --budget quick \
            --device cuda --isolation none --report-dir "$out/quick_none$round"
        timed quick_worker$round python3 -m sampling_harness check all --budget quick \
            --device cuda --report-dir "$out/quick_worker$round"
    done
    ;;
standard)   # then, on the warm machine and where time is left, the quick A/B once more
    t0=$(date +%s)
    timed standard timeout 470 python3 -m sampling_harness check all --budget standard \
        --device cuda --report-dir "$out/standard"
    if [ $(( $(date +%s) - t0 )) -lt 400 ]; then
        timed quick_none timeout 70 python3 -m sampling_harness check all --budget quick \
            --device cuda --isolation none --report-dir "$out/quick_none"
        timed quick_worker timeout 70 python3 -m sampling_harness check all --budget quick \
            --device cuda --report-dir "$out/quick_worker"
    fi
    ;;
esac
for d in quick_warmup quick_worker quick_none quick_none1 quick_worker1 quick_none2 quick_worker2 standard; do
    [ -f "$out/$d/report.json" ] && python3 - "$out/$d/report.json" <<'PY' | tee -a "$out/times.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[1].split("/")[-2], r["verdict"], len(r["checks"]), "checks", r.get("seconds"), "s",
      sum(c["verdict"] != "pass" for c in r["checks"]), "not pass; checks' seconds summed",
      round(sum(c["duration"] for c in r["checks"]), 1), "; kernel calls",
      sum(c["details"].get("kernel_calls", 0) for c in r["checks"]))
PY
done
for d in quick_worker quick_none standard; do
    [ -f "$out/$d/report.json" ] && cp "$out/$d/report.json" "$out/$d.json"
done
find "$out" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +     # 8 files come back
