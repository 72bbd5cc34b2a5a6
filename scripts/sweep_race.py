"""Sweep triton-exact's GPU launch: chunks per level-1 load, warps per program, programs per
SM (rows are split into runs of chunks to reach it), software-pipelining stages;
the noise never depends on these. Times CUDA-graph replay (launch cost apart) with inputs
refreshed and L2 flushed before each replay. Usage: python3 scripts/sweep_race.py
[BxV ...]   (prints a table, best first per shape)."""

import itertools
import sys

import torch

import kernels.sample.triton_race as tr
from harness.bench import copy_bandwidth, median_graph_ms

device = torch.device("cuda")
bandwidth = copy_bandwidth(device)
shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1:]] or [(256, 151936)]
print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s")
print("| B x V | chunks/load | warps | programs/SM | stages | graph ms | % of floor |")
print("|---|---|---|---|---|---|---|")
for batch, vocab in shapes:
    probs = torch.rand(batch, vocab, device=device).pow_(4)
    probs /= probs.sum(dim=1, keepdim=True)
    floor = (batch * vocab * 4 + batch * 8) / bandwidth * 1e3
    rows = []
    for chunks, warps, stages, per_sm in itertools.product(
            (1, 2, 4, 8), (4, 8), (1, 3, 4), (1, 2, 4)):
        tr.GPU_CHUNKS, tr.GPU_WARPS, tr.GPU_STAGES, tr.GPU_PROGRAMS_PER_SM = \
            chunks, warps, stages, per_sm
        ms = median_graph_ms(lambda work, seed: tr.race_exact(work["probs"], seed),
                             {"probs": probs}, 20)
        rows.append((ms, chunks, warps, per_sm, stages))
    for ms, chunks, warps, per_sm, stages in sorted(rows)[:8]:
        print(f"| {batch}x{vocab} | {chunks} | {warps} | {per_sm} | {stages} | {ms:.4f} | "
              f"{100 * floor / ms:.0f}% |", flush=True)
