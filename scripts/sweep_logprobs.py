"""Sweep triton-logprobs' GPU launch shape at the benchmark shapes (raw_logprobs, fp32, random
ids): BLOCK, warps per program and programs per SM (rows split into chunks to reach it),
timed like ``sampling-harness bench`` (median of device-event times, fresh inputs, flushed
L2) against the floor (logits read once + 12 B K) at the measured copy bandwidth. Values
and ranks never depend on these settings. CUDA only.
Usage: python3 scripts/sweep_logprobs.py [--quick]   (prints a table)"""

import itertools
import sys

import torch

import kernels.logprobs.triton_logprobs as tl_logprobs
from harness.bench import copy_bandwidth, median_ms
from harness.families.logprobs import FAMILY, bench_batch

SHAPES = FAMILY.bench.gpu_shapes                  # 256x151936x21, 32x128256x21
BLOCKS, WARPS, PER_SM = (1024, 2048, 4096), (4, 8, 16), (2, 3, 4, 6, 8, 12, 16)
if "--quick" in sys.argv:
    BLOCKS, WARPS, PER_SM = (2048,), (8,), (2, 4, 8)

device = torch.device("cuda")
bandwidth = copy_bandwidth(device)
print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s; defaults BLOCK {tl_logprobs.GPU_BLOCK}, "
      f"warps {tl_logprobs.GPU_WARPS}, programs/SM {tl_logprobs.GPU_PROGRAMS_PER_SM}")
print("| B x V x K | BLOCK | warps | programs/SM | S | median ms | % of floor |")
print("|---|---|---|---|---|---|---|")
best = {}
for shape in SHAPES:
    inputs = bench_batch(shape, device)
    floor_ms = FAMILY.bench.floor_bytes(inputs) / bandwidth * 1e3
    batch, vocab = inputs["logits"].shape
    for block, warps, per_sm in itertools.product(BLOCKS, WARPS, PER_SM):
        if block < 128 * warps:                  # 4 adjacent elements per thread at least
            continue
        tl_logprobs.GPU_BLOCK, tl_logprobs.GPU_WARPS = block, warps
        tl_logprobs.GPU_PROGRAMS_PER_SM = per_sm
        splits = tl_logprobs._launch_shape(batch, vocab, inputs["token_ids"].shape[1], device)[3]
        ms = median_ms(lambda work, _: tl_logprobs.logprobs_triton(**work), inputs, 30)
        print(f"| {shape} | {block} | {warps} | {per_sm} | {splits} | {ms:.4f} | "
              f"{100 * floor_ms / ms:.0f}% |", flush=True)
        if shape not in best or ms < best[shape][0]:
            best[shape] = ms, (block, warps, per_sm)
for shape, (ms, setting) in best.items():
    print(f"best at {shape}: {ms:.4f} ms with (BLOCK, warps, programs/SM) = {setting}")
