"""triton-sample-logits' whole-row fallback on a GPU: the call timed under CUDA-graph replay
(like ``sampling-harness bench --cuda-graph``) on the filters that reach ``_fallback_race``
(top-p alone with a wide set, no filter, k > KMAX) over the fallback's launch settings:
warps, search tile and programs per SM. Ids never depend on the launch: each setting's ids
are compared with the first's. CUDA only.
Usage: python3 scripts/sweep_fallback.py [--grid WARPS;SEARCH;PROGRAMS_PER_SM]"""

import itertools
import sys

import torch

import kernels.sample_logits.triton_filtered_race as race
import kernels.sample_logits.triton_row_fallback as fallback
from harness.bench import copy_bandwidth, median_ms
from harness.families.sample_logits import FAMILY, bench_batch

GRID = ((4, 8), (256, 512, 1024), (1, 2, 4))
if "--grid" in sys.argv:
    GRID = tuple(tuple(int(v) for v in part.split(","))
                 for part in sys.argv[sys.argv.index("--grid") + 1].split(";"))
SHAPES = ("256x151936:top-p", "256x151936:plain", "32x128256:top-p", "256x151936:k2000")

device = torch.device("cuda")
bandwidth = copy_bandwidth(device)
torch.manual_seed(0)
print(f"device {torch.cuda.get_device_name(device)}, copy bandwidth {bandwidth / 1e12:.2f} TB/s")
print("| shape | warps | search | programs per SM | graph ms | % of floor |")
print("|---|---|---|---|---|---|")
for shape in SHAPES:
    base, _, name = shape.partition(":")
    inputs = bench_batch(base + ("" if name == "k2000" else ":" + name), device)
    if name == "k2000":
        inputs["top_k"].fill_(2000)
    floor_ms = FAMILY.bench.floor_bytes(inputs) / bandwidth * 1e3
    first = None
    for warps, search, per_sm in itertools.product(*GRID):
        fallback.GPU_WARPS, fallback.GPU_SEARCH, fallback.GPU_PROGRAMS_PER_SM = (
            warps, search, per_sm)
        ms = median_ms(lambda work, seed: race.sample_logits_triton(**work, seed=seed), inputs,
                       20, graph=True)
        ids = race.sample_logits_triton(**inputs, seed=5)
        first = ids if first is None else first
        assert torch.equal(ids, first), f"{shape} {warps} {search} {per_sm}: ids differ"
        print(f"| {shape} | {warps} | {search} | {per_sm} | {ms:.4f} | "
              f"{100 * floor_ms / ms:.0f}% |", flush=True)
