"""``sampling-harness bench sample``: median time, effective bandwidth, distance from the
memory floor, and ratios to the torch baselines, printed as a table.

The floor of a sampling kernel is reading probs once (4 B V bytes) plus writing B ids, at
the copy bandwidth measured on the same device (bytes read + written by a large
device-to-device copy). Each kernel gets its own copy of probs (kernels may overwrite it);
every timed call starts with a flushed L2; the median of many calls is reported.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import torch

from harness.errors import HarnessError
from harness.loader import load
from harness.reports import atomic_write
from harness.runner import resolve_device
from kernels import CLEAN

GPU_SHAPES = ((256, 151936), (32, 128256), (1, 32000))
CPU_SHAPES = ((16, 4099),)
BASELINES = ("torch-fp32", "torch-fp64")


def median_ms(fn, probs: torch.Tensor, calls: int) -> float:
    """Median milliseconds of ``fn(work, seed)``. Before each call, outside the timed region,
    ``work`` gets a fresh copy of probs (kernels may overwrite it; a reused, overwritten
    input can turn denormal and slow) and the L2 is flushed. On a GPU the calls are timed by
    device events and synchronised once at the end, so the host runs ahead and its launch
    gaps are not timed. On a CPU: wall time."""
    work = torch.empty_like(probs)
    cuda = probs.device.type == "cuda"
    flush = torch.empty((64 << 20) if cuda else (1 << 20), dtype=torch.int8, device=probs.device)
    warm = 3
    if not cuda:
        times = []
        for i in range(warm + calls):
            work.copy_(probs)
            started = time.perf_counter()
            fn(work, 1000 + i)
            times.append((time.perf_counter() - started) * 1e3)
        return statistics.median(times[warm:])
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(warm + calls)]
    for i, (begin, end) in enumerate(events):
        work.copy_(probs)
        flush.zero_()
        begin.record()
        fn(work, 1000 + i)
        end.record()
    torch.cuda.synchronize()
    return statistics.median(begin.elapsed_time(end) for begin, end in events[warm:])


def copy_bandwidth(device: torch.device) -> float:
    """Bytes per second of a large device copy, counting bytes read and written."""
    n = (1 << 28) if device.type == "cuda" else (1 << 24)
    src = torch.ones(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    ms = median_ms(lambda work, _: dst.copy_(work), src, 20)
    return 2 * src.numel() * 4 / (ms * 1e-3)


def run_bench(family: str, targets: list[str], device: str, shapes: list[str],
              report_dir: Path) -> int:
    dev = resolve_device(device)
    names = targets or list(CLEAN[family])
    kernels = {name: load(name, family) for name in names}
    for base in BASELINES:
        kernels.setdefault(base, load(base, family))
    try:
        sizes = [tuple(int(x) for x in s.lower().split("x")) for s in shapes] or \
            list(GPU_SHAPES if dev.type == "cuda" else CPU_SHAPES)
    except ValueError:
        raise HarnessError(f"--shape takes BxV, e.g. 256x151936; got {shapes}") from None
    bandwidth = copy_bandwidth(dev)
    calls = 50 if dev.type == "cuda" else 5
    rows = []
    for batch, vocab in sizes:
        probs = torch.rand(batch, vocab, device=dev).pow_(4)
        probs /= probs.sum(dim=1, keepdim=True)
        floor_bytes = batch * vocab * 4 + batch * 8
        times = {name: median_ms(k.fn, probs, calls) for name, k in kernels.items()}
        for name, ms in times.items():
            rows.append({"shape": f"{batch}x{vocab}", "kernel": name, "median_ms": ms,
                         "GB_per_s": floor_bytes / (ms * 1e-3) / 1e9,
                         "pct_of_floor": 100 * (floor_bytes / bandwidth) / (ms * 1e-3),
                         "vs_torch_fp32": times["torch-fp32"] / ms,
                         "vs_torch_fp64": times["torch-fp64"] / ms})
    header = (f"device {torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'cpu'}, "
              f"copy bandwidth {bandwidth / 1e12:.2f} TB/s (read + write), median of {calls}")
    lines = [header, "", "| B x V | kernel | median ms | GB/s | % of floor | x torch-fp32 "
             "| x torch-fp64 |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['shape']} | {r['kernel']} | {r['median_ms']:.4f} | {r['GB_per_s']:.1f} | "
              f"{r['pct_of_floor']:.0f}% | {r['vs_torch_fp32']:.2f} | {r['vs_torch_fp64']:.2f} |"
              for r in rows]
    table = "\n".join(lines) + "\n"
    print(table)
    atomic_write(report_dir / "bench.md", table)
    atomic_write(report_dir / "bench.json", json.dumps({"header": header, "rows": rows},
                                                         indent=2) + "\n")
    return 0
