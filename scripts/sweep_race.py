"""Sweep the GPU launch of triton-exact (or triton-inverse-cdf): knobs that never change the
draws. Times CUDA-graph replay (launch cost apart) with inputs refreshed and L2 flushed before
each replay; prints one table row per configuration as it is timed, then the best ten, then
the best three and the current default at the other shapes.

triton-exact: warps, pipelining stages of the level-1 loop, late chunk noise (the level-1
variates drawn after the loop as one vector), programs per
SM (rows split into runs of chunks to reach it). Q, the chunk layout, is a function of V
alone: it is no knob. triton-inverse-cdf: chunk width W (a change of W may move a draw only
where float64 sums in another order round across u T), warps, stages, programs per SM.

Usage: python3 scripts/sweep_race.py [--kernel exact|inverse-cdf] [--dry] [BxV ...]
(--dry: on the CPU through the Triton interpreter, small shapes, three configurations).
"""

import argparse
import itertools
import os
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--kernel", choices=("exact", "inverse-cdf"), default="exact")
parser.add_argument("--dry", action="store_true", help="CPU interpreter, tiny shapes")
parser.add_argument("--budget-s", type=float, default=float("inf"),
                    help="stop timing new configurations after this many seconds")
parser.add_argument("shapes", nargs="*")
args = parser.parse_args()
if args.dry:
    os.environ["TRITON_INTERPRET"] = "1"          # before triton is imported

import torch  # noqa: E402

import kernels.sample.triton_inverse_cdf as ic  # noqa: E402
import kernels.sample.triton_race as tr  # noqa: E402
from harness.bench import copy_bandwidth, median_ms  # noqa: E402

device = torch.device("cpu" if args.dry else "cuda")
if args.dry:   # the interpreter ignores launch knobs: use the GPU launch path's shapes
    tr.INTERPRET = ic.INTERPRET = False
    tr.multiprocessors = ic.multiprocessors = lambda dev: 4
    for mod in (tr, ic):
        real = mod._launch_shape
        mod._launch_shape = (lambda b, v, d, real=real: real(b, v, torch.device("cuda")))
default_shapes = ["8x4099", "1x1000"] if args.dry else ["256x151936", "32x128256", "1x32000"]
shapes = [tuple(map(int, s.split("x"))) for s in (args.shapes or default_shapes)]

if args.kernel == "exact":
    knobs = ("warps", "stages", "late", "programs/SM")
    names = ("GPU_WARPS", "GPU_STAGES", "GPU_LATE_NOISE", "GPU_PROGRAMS_PER_SM")
    module, fn = tr, tr.race_exact
    grid = [(warps, stages, late, per_sm) for late, stages, warps, per_sm in
            itertools.product((True, False), (4, 3, 5), (4, 8), (1, 2))]
else:
    knobs = ("W", "warps", "stages", "programs/SM")
    names = ("GPU_CHUNK", "GPU_WARPS", "GPU_STAGES", "GPU_PROGRAMS_PER_SM")
    module, fn = ic, ic.inverse_cdf
    grid = [(w, warps, stages, per_sm) for w, stages, warps, per_sm in
            itertools.product((2048, 1024, 4096), (3, 2, 4), (4, 8), (1, 2))]
default = tuple(getattr(module, name) for name in names)
if args.dry:
    grid = [grid[0], grid[len(grid) // 2], grid[-1]]


def apply(config) -> None:
    for name, value in zip(names, config, strict=True):
        setattr(module, name, value)


def warm_capture_stream(probs) -> None:
    """One call on the stream torch.cuda.graph captures on, so that a kernel's held scratch
    exists before capture (no memset node inside the timed graph)."""
    if device.type != "cuda":
        return
    stream = torch.cuda.graph.default_capture_stream or torch.cuda.Stream()
    torch.cuda.graph.default_capture_stream = stream
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn(probs.clone(), 0)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()


def time_config(config, probs) -> float:
    apply(config)
    warm_capture_stream(probs)
    return median_ms(lambda work, seed: fn(work["probs"], seed), {"probs": probs},
                     3 if args.dry else 20, graph=device.type == "cuda")


def row(shape, config, ms, floor) -> str:
    cells = " | ".join(str(v if v != "" else "-") for v in config)
    return f"| {shape[0]}x{shape[1]} | {cells} | {ms:.4f} | {100 * floor / ms:.0f}% |"


bandwidth = copy_bandwidth(device)
name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (dry)"
print(f"triton-{args.kernel}, device {name}, copy bandwidth {bandwidth / 1e12:.2f} TB/s; "
      f"default {dict(zip(knobs, default, strict=True))}")
header = ("| B x V | " + " | ".join(knobs) + " | graph ms | % of floor |\n"
          + "|---" * (len(knobs) + 3) + "|")


def probs_of(batch, vocab):
    probs = torch.rand(batch, vocab, device=device).pow_(4)
    return probs / probs.sum(dim=1, keepdim=True)


def floor_of(batch, vocab):
    return (batch * vocab * 4 + batch * 8) / bandwidth * 1e3


(batch, vocab), others = shapes[0], shapes[1:]
probs, floor = probs_of(batch, vocab), floor_of(batch, vocab)
print(f"\nall configurations at {batch}x{vocab}, as timed\n\n{header}", flush=True)
timed = []
started = time.perf_counter()
for config in dict.fromkeys([default, *grid]):
    if time.perf_counter() - started > args.budget_s:
        print(f"(time budget of {args.budget_s:.0f} s spent: {len(timed)} configurations timed)")
        break
    try:
        ms = time_config(config, probs)
    except Exception as exc:   # noqa: BLE001 - a configuration that fails to compile or run
        print(f"| {batch}x{vocab} | {config} failed: {type(exc).__name__}: "
              f"{str(exc).splitlines()[0][:120] if str(exc) else ''} |", flush=True)
        continue
    timed.append((ms, config))
    print(row((batch, vocab), config, ms, floor), flush=True)
timed.sort()
print(f"\nbest ten at {batch}x{vocab}\n\n{header}")
for ms, config in timed[:10]:
    print(row((batch, vocab), config, ms, floor))
finalists = list(dict.fromkeys([config for _, config in timed[:3]] + [default]))
if others:
    print(f"\nthe best three and the default at the other shapes\n\n{header}", flush=True)
for shape in others:
    probs, floor = probs_of(*shape), floor_of(*shape)
    for config in finalists:
        print(row(shape, config, time_config(config, probs), floor), flush=True)
apply(default)
sys.exit(0 if timed else 1)
