"""Sweep triton-exact's launch options on a GPU at 256 x 151936: splits per row, warps,
register cap, prefetch, Philox rounds (rounds change the draws; the rest never does).
Usage: python3 scripts/sweep_race.py   (prints a table)."""

import itertools

import torch

import kernels.sample.triton_race as tr
from harness.bench import copy_bandwidth, median_ms

device = torch.device("cuda")
bandwidth = copy_bandwidth(device)
batch, vocab = 256, 151936
probs = torch.rand(batch, vocab, device=device).pow_(4)
probs /= probs.sum(dim=1, keepdim=True)
floor = (batch * vocab * 4 + batch * 8) / bandwidth * 1e3
print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s; floor {floor * 1e3:.1f} us")
print("| splits | warps | prefetch | rounds | median ms | % of floor |\n|---|---|---|---|---|---|")
for splits, warps, prefetch, rounds in itertools.product((1, 2, 4), (4, 8), (True, False),
                                                           (10, 7)):
    tr._launch_shape = lambda b, v, d, s=splits, w=warps: (1, s, w)
    tr.LAUNCH_EXTRA.clear()
    tr.LAUNCH_EXTRA["PREFETCH"] = prefetch
    if rounds != 10:
        tr.LAUNCH_EXTRA["ROUNDS"] = rounds
    try:
        ms = median_ms(tr.race_exact, probs, 30)
    except Exception as exc:  # an option this triton does not take
        print(f"| {splits} | {warps} | {prefetch} | {rounds} | {type(exc).__name__} | |")
        continue
    print(f"| {splits} | {warps} | {prefetch} | {rounds} | {ms:.4f} | {100 * floor / ms:.0f}% |")
