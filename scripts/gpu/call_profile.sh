#!/usr/bin/env bash
# One-off (issue 52): where a call's time goes on an idle GPU. rejection's marginal at quick,
# in-process, under cProfile (the host) and torch.profiler (the CUDA kernels, copies and
# syncs); tables of both, and per call. Usage: bash scripts/gpu/call_profile.sh
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu/steps.sh call_profile
export TRITON_CACHE_DIR=/tmp/tc-profile
args=(check rejection --kernel triton-rejection -k marginal --budget quick --device cuda
      --isolation none)
step warm 200 python3 -m sampling_harness "${args[@]}" --report-dir "$out/warm"
STEP_TAIL=140 step torch-profile 200 python3 - "$out" "${args[@]}" <<'PY'
import cProfile, pstats, sys
import torch
from torch.profiler import ProfilerActivity, profile
from sampling_harness.commands.cli import main
out, argv = sys.argv[1], sys.argv[2:] + ["--report-dir", sys.argv[1] + "/profiled"]
host = cProfile.Profile()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    host.enable()
    try:
        main(argv)
    except SystemExit:
        pass
    host.disable()
print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=25, max_name_column_width=60))
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))
stats = pstats.Stats(host)
stats.sort_stats("cumulative").print_stats("runner.py|contract.py|draws.py|guard.py|isolation.py|faults.py|flags.py|triton_rejection|marginal.py|crashes|terminal|progress", 45)
stats.sort_stats("tottime").print_stats(30)
PY
pack
