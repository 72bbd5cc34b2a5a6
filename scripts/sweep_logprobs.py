"""triton-logprobs on a GPU: its unpruned loop (prune_limit -1) against its default rule (the
pruned loop for ids that are the row's largest) at the benchmark shapes (raw_logprobs,
fp32), with requested ids ``top`` (one sampled id and the row's 20 largest logits, as
engines ask) and ``random`` (K uniform ids), timed
like ``sampling-harness bench`` (median of device-event times, fresh inputs, flushed L2;
eager and CUDA-graph replay, which leaves out the host's launch cost) against the floor
(logits read once + 12 B K) at the measured copy bandwidth; the two kernels' ranks must be
equal and their values within float32 rounding. With --sweep, each kernel also over its
launch (``Launch``): BLOCK, warps per program, programs per SM (rows split into chunks to
reach it) and the loops' pipeline stages (1: not pipelined); values
and ranks never depend on these, and each setting's ranks are checked equal to
torch-logprobs'. CUDA only.
Usage: python3 scripts/sweep_logprobs.py [--sweep] [--quick] [--pruned]
       [--grid B,..;W,..;P,..[;S,..]]
(prints tables; --pruned sweeps the pruned kernel only, --grid names the launch shapes)"""

import itertools
import sys
from dataclasses import replace

import torch
import triton

import kernels.logprobs.triton_logprobs as tl_logprobs
from harness.bench import copy_bandwidth, median_ms
from harness.families.logprobs import FAMILY, bench_batch
from kernels.logprobs.torch_logprobs import logprobs_torch

SHAPES = FAMILY.bench.gpu_shapes      # 256x151936x21 and 32x128256x21, ids top and random
BLOCKS, WARPS, PER_SM = (512, 1024, 2048, 4096), (4, 8, 16), (2, 3, 4, 6, 8)
STAGES = (tl_logprobs.GPU.stages,)
if "--quick" in sys.argv:
    BLOCKS, WARPS, PER_SM = (1024, 2048), (4, 8), (2, 4, 8)
if "--grid" in sys.argv:
    parts = [tuple(int(v) for v in part.split(","))
             for part in sys.argv[sys.argv.index("--grid") + 1].split(";")]
    BLOCKS, WARPS, PER_SM, STAGES = (parts + [STAGES])[:4]
DEFAULT = (tl_logprobs.GPU.block, tl_logprobs.GPU.warps, tl_logprobs.GPU_PROGRAMS_PER_SM,
           tl_logprobs.GPU.stages)
KERNELS = {"unpruned": -1, "pruned": None}        # the launch's prune_limit

device = torch.device("cuda")
bandwidth = copy_bandwidth(device)
torch.manual_seed(0)
cases = {shape: bench_batch(shape, device) for shape in SHAPES}


def launch(limit, setting: tuple, inputs: dict) -> tl_logprobs.Launch:
    block, warps, per_sm, stages = setting
    splits = triton.cdiv(per_sm * torch.cuda.get_device_properties(device).multi_processor_count,
                         inputs["logits"].shape[0])
    return replace(tl_logprobs.GPU, block=block, warps=warps, splits=splits, stages=stages,
                   prune_limit=limit)


def run(limit, setting: tuple, inputs: dict):
    return tl_logprobs.logprobs_launch(**inputs, launch=launch(limit, setting, inputs))


def timed(limit, setting: tuple, inputs: dict, graph: bool) -> float:
    return median_ms(lambda work, _: run(limit, setting, work), inputs, 30, graph)


def row(shape, name, setting, inputs):
    """Print one table row; return the faster of the eager and the graph median."""
    vocab = inputs["logits"].shape[1]
    splits = tl_logprobs.split_columns(vocab, setting[0], launch(None, setting, inputs).splits)[0]
    eager = timed(KERNELS[name], setting, inputs, False)
    replay = timed(KERNELS[name], setting, inputs, True)
    floor_ms = FAMILY.bench.floor_bytes(inputs) / bandwidth * 1e3
    best = min(eager, replay)
    print(f"| {shape} | {name} | {' | '.join(map(str, setting))} | {splits} | {eager:.4f} | "
          f"{replay:.4f} | {100 * floor_ms / best:.0f}% |", flush=True)
    return best


print(f"device {torch.cuda.get_device_name(device)}, copy bandwidth {bandwidth / 1e12:.2f} TB/s;"
      f" defaults (BLOCK, warps, programs/SM) = {DEFAULT}; % of floor on the faster of eager "
      "and graph")
header = ("| B x V x K:ids | kernel | BLOCK | warps | programs/SM | stages | S | eager ms | "
          "graph ms | % of floor |\n|---|---|---|---|---|---|---|---|---|---|")
print(header)
for shape, inputs in cases.items():
    outputs = {}
    for name, limit in KERNELS.items():
        row(shape, name, DEFAULT, inputs)
        outputs[name] = run(limit, DEFAULT, inputs)
    (v0, r0), (v1, r1) = outputs.values()
    _, r_torch = logprobs_torch(**inputs)
    assert torch.equal(r0, r_torch) and torch.equal(r1, r_torch), f"{shape}: ranks differ"
    assert torch.allclose(v0, v1, rtol=1e-6, atol=1e-5), f"{shape}: values differ"
print("pruned, unpruned loop and torch-logprobs: equal ranks, values within 1e-5, at every shape")

if "--sweep" in sys.argv:
    print("\n" + header)
    best = {}
    for shape, inputs in cases.items():
        for name in (["pruned"] if "--pruned" in sys.argv else KERNELS):
            _, torch_ranks = logprobs_torch(**inputs)
            for setting in itertools.product(BLOCKS, WARPS, PER_SM, STAGES):
                if setting[0] < 128 * setting[1]:   # 4 adjacent elements per thread at least
                    continue
                ms = row(shape, name, setting, inputs)
                assert torch.equal(run(KERNELS[name], setting, inputs)[1], torch_ranks), \
                    f"{shape} {name} {setting}: ranks differ from torch-logprobs'"
                if (shape, name) not in best or ms < best[shape, name][0]:
                    best[shape, name] = ms, setting
    for (shape, name), (ms, setting) in best.items():
        print(f"best at {shape}, {name}: {ms:.4f} ms with (BLOCK, warps, programs/SM, stages) = "
              f"{setting}")
