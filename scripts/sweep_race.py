"""Sweep triton-exact's GPU launch shape at the benchmark shapes: warps per program and
programs per SM (rows are split into runs of chunks to reach it); the noise never depends
on these. Usage: python3 scripts/sweep_race.py   (prints a table)."""

import itertools

import torch

import kernels.sample.triton_race as tr
from harness.bench import GPU_SHAPES, copy_bandwidth, median_ms

device = torch.device("cuda")
bandwidth = copy_bandwidth(device)
print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s")
print("| B x V | warps | programs/SM | median ms | % of floor |\n|---|---|---|---|---|")
for (batch, vocab) in GPU_SHAPES:
    probs = torch.rand(batch, vocab, device=device).pow_(4)
    probs /= probs.sum(dim=1, keepdim=True)
    floor = (batch * vocab * 4 + batch * 8) / bandwidth * 1e3
    for warps, per_sm in itertools.product((1, 2, 4, 8), (1, 2, 4, 8, 16)):
        tr.GPU_WARPS, tr.GPU_PROGRAMS_PER_SM = warps, per_sm
        ms = median_ms(tr.race_exact, probs, 30)
        print(f"| {batch}x{vocab} | {warps} | {per_sm} | {ms:.4f} | {100 * floor / ms:.0f}% |")
