"""Sweep triton-exact's GPU launch: rows and warps per program, programs per SM (rows are
split into runs of chunks to reach it), software-pipelining stages and unrolling of the
level-1 loop;
the noise never depends on these. Times CUDA-graph replay (launch cost apart) with inputs
refreshed and L2 flushed before each replay. Usage: python3 scripts/sweep_race.py
[BxV ...]   (prints a table, best first per shape)."""

import itertools
import sys

import torch

import kernels.sample.triton_race as tr
from harness.bench import copy_bandwidth, median_ms

device = torch.device("cuda")
bandwidth = copy_bandwidth(device)
shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1:]] or [(256, 151936)]
print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s")
print("| B x V | rows | warps | programs/SM | stages | unroll | graph ms | % of floor |")
print("|---|---|---|---|---|---|---|---|")
for batch, vocab in shapes:
    probs = torch.rand(batch, vocab, device=device).pow_(4)
    probs /= probs.sum(dim=1, keepdim=True)
    floor = (batch * vocab * 4 + batch * 8) / bandwidth * 1e3
    rows = []
    for block_r, warps, stages, unroll, per_sm in itertools.product(
            (1, 2), (2, 4, 8), (1, 3, 4), (1, 2), (1, 2, 3, 4, 8)):
        tr.GPU_ROWS, tr.GPU_WARPS, tr.GPU_STAGES, tr.GPU_UNROLL, tr.GPU_PROGRAMS_PER_SM = \
            block_r, warps, stages, unroll, per_sm
        ms = median_ms(lambda work, seed: tr.race_exact(work["probs"], seed),
                       {"probs": probs}, 20, graph=True)
        rows.append((ms, block_r, warps, per_sm, stages, unroll))
    for ms, block_r, warps, per_sm, stages, unroll in sorted(rows)[:10]:
        print(f"| {batch}x{vocab} | {block_r} | {warps} | {per_sm} | {stages} | {unroll} | "
              f"{ms:.4f} | {100 * floor / ms:.0f}% |", flush=True)
