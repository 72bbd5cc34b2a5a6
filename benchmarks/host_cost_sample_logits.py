"""Where the host's time goes in one eager call of triton-sample-logits (CUDA): each step of
the device path timed on the host (perf_counter, mean of many calls, the GPU idle at a
1 x 32000 batch, so the host alone is timed), beside a bare Triton launch and a torch op.
A call whose host steps add up to more than its kernels' time is host-bound in the bench.
With --profile, the whole call's host functions by own time (cProfile, REPS calls).
Usage: python3 benchmarks/host_cost_sample_logits.py [B,V] [--profile]"""

import cProfile
import pstats
import sys

import torch

import sampling_harness.kernels.sample_logits.triton_filtered_race as race
from sampling_harness.bench.ceiling import row_sum
from sampling_harness.bench.timing import host_us
from sampling_harness.kernels.sample_logits.triton_row_fallback import fallback_race
from sampling_harness.kernels.sample_logits.triton_top_k_select import select_race

REPS = 300


def main() -> None:
    shape = [a for a in sys.argv[1:] if not a.startswith("--")]
    batch, vocab = (int(v) for v in (shape[0] if shape else "1,32000").split(","))
    dev = torch.device("cuda")
    x = torch.randn(batch, vocab, device=dev) * 2
    t = torch.full((batch,), 0.8, device=dev)
    k = torch.full((batch,), 50, dtype=torch.int64, device=dev)
    p = torch.full((batch,), 0.9, device=dev)
    maxima, masses, bad, unresolved = race.group_maxima(x, t, k, p)
    ids, unresolved = torch.empty(batch, dtype=torch.int64, device=dev), unresolved[:batch]
    width = race.group_width(vocab)
    steps = {
        "torch.empty(B) int64": lambda: torch.empty(batch, dtype=torch.int64, device=dev),
        "tensor.to(same dtype).contiguous()": lambda: t.to(torch.float32).contiguous(),
        "a Triton launch (row sum, 3 args)": lambda: row_sum(x, 1024, 4, 1, 1),
        "group_maxima (held buffers + launch)": lambda: race.group_maxima(x, t, k, p),
        "select_race (held scratch + launch)": lambda: select_race(
            x, maxima, masses, bad, width, t, k, p, race.KMAX, 1, 1, race.GPU_WARPS, ids,
            unresolved),
        "fallback_race (launch, no row flagged)": lambda: fallback_race(
            x, t, k, p, unresolved, ids, 1),
        "whole call": lambda: race.sample_logits_triton(x, t, k, p, 1),
    }
    print(f"{torch.cuda.get_device_name(dev)}, {batch} x {vocab}, host microseconds per step "
          f"(mean of {REPS})")
    print("| step | host us |\n|---|---|")
    for name, fn in steps.items():
        print(f"| {name} | {host_us(fn, REPS):.1f} |", flush=True)
    if "--profile" in sys.argv:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(REPS):
            race.sample_logits_triton(x, t, k, p, 1)
        profile.disable()
        torch.cuda.synchronize()
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
