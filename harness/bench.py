"""``sampling-harness bench FAMILY``: median time, effective bandwidth, distance from the
memory floor, and ratios to the family's baselines, printed as a table.

The floor is the fewest bytes a kernel of the family must move (the family's
``floor_bytes``: for ``sample``, probs read once and the ids written) at the copy bandwidth
measured on the same device (bytes read + written by a large device-to-device copy). Each
timed call gets a fresh copy of its inputs (kernels may overwrite them) and starts with a
flushed L2, both outside the timed region; the median of many calls is reported.
``--kernel`` adds any target (a user's own kernel) to the table beside the baselines.
A shape may name a variant of the inputs after a colon (logprobs: ``256x151936x21:top``, the
requested ids); a shape without one is timed in each variant of the family's default shapes,
or in those ``--ids`` names.
``--cuda-graph`` times the replay of a CUDA graph of one call instead (what an engine's
decode step pays: launch cost apart), the eager median beside it; a kernel that cannot be
captured (a host synchronisation, a CPU op) shows "-".
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import torch

from harness.errors import HarnessError
from harness.families import FAMILIES
from harness.loader import load
from harness.registry import by_role
from harness.reports import atomic_write
from harness.runner import resolve_device


def median_ms(call, inputs: dict, calls: int, graph: bool = False) -> float:
    """Median milliseconds of ``call(work, seed)``, ``work`` a copy of ``inputs``. Before
    each call, outside the timed region, every tensor input is refreshed from its original
    (a reused, overwritten input can turn denormal and slow) and the L2 is flushed. On a
    GPU the calls are timed by device events and synchronised once at the end, so the host
    runs ahead and its launch gaps are not timed. On a CPU: wall time. With ``graph`` the
    timed step is the replay of a CUDA graph of one call instead (NaN when the call cannot
    be captured)."""
    work = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    device = next(v.device for v in inputs.values() if isinstance(v, torch.Tensor))
    cuda = device.type == "cuda"
    flush = torch.empty((64 << 20) if cuda else (1 << 20), dtype=torch.int8, device=device)
    warm = 3

    def refresh() -> None:
        for name, value in inputs.items():
            if isinstance(value, torch.Tensor):
                work[name].copy_(value)

    def step(i: int) -> None:
        call(work, 1000 + i)

    if graph:
        step = _captured(call, work, refresh)
        if step is None:
            return float("nan")
    if not cuda:
        times = []
        for i in range(warm + calls):
            refresh()
            started = time.perf_counter()
            step(i)
            times.append((time.perf_counter() - started) * 1e3)
        return statistics.median(times[warm:])
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(warm + calls)]
    for i, (begin, end) in enumerate(events):
        refresh()
        flush.zero_()
        begin.record()
        step(i)
        end.record()
    torch.cuda.synchronize()
    return statistics.median(begin.elapsed_time(end) for begin, end in events[warm:])


def _captured(call, work: dict, refresh):
    """``step(i)`` replaying a CUDA graph of ``call(work, 1000)``, captured after two eager
    warm-up calls on a side stream, as torch asks, and on that same stream: scratch held per
    stream (kernels/split_scratch.py) then exists before the capture, so no allocation or
    memset of it lands in the timed graph. None when the call cannot be captured."""
    graph = torch.cuda.CUDAGraph()
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                call(work, 1000)
        torch.cuda.current_stream().wait_stream(side)
        refresh()
        with torch.cuda.graph(graph, stream=side):
            call(work, 1000)
    except Exception:      # noqa: BLE001 - any failure to capture means "not capturable"
        torch.cuda.synchronize()
        return None
    return lambda i: graph.replay()


def copy_bandwidth(device: torch.device) -> float:
    """Bytes per second of a large device copy, counting bytes read and written."""
    n = (1 << 28) if device.type == "cuda" else (1 << 24)
    src = torch.ones(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    ms = median_ms(lambda work, _: dst.copy_(work["src"]), {"src": src}, 20)
    return 2 * src.numel() * 4 / (ms * 1e-3)


def with_variants(shapes: list[str], variants: list[str], defaults: tuple[str, ...]) -> list[str]:
    """``SHAPE:VARIANT`` strings: each shape in each of ``variants`` when given, else a shape
    keeps its own variant or, without one, takes each variant of ``defaults`` (the family's
    default shapes; none there: the shape as given)."""
    known = list(dict.fromkeys(s.partition(":")[2] for s in defaults if ":" in s))
    out = []
    for shape in shapes:
        base, _, own = shape.partition(":")
        for variant in variants or ([own] if own else known) or [""]:
            out.append(f"{base}:{variant}" if variant else base)
    return list(dict.fromkeys(out))


def run_bench(family_name: str, targets: list[str], device: str, shapes: list[str],
              report_dir: Path, cuda_graph: bool = False, variants: list[str] = ()) -> int:
    family = FAMILIES[family_name]
    spec = family.bench
    if spec is None:
        raise HarnessError(f"family {family_name!r} has no benchmark")
    dev = resolve_device(device)
    if cuda_graph and dev.type != "cuda":
        raise HarnessError("--cuda-graph needs a CUDA device")
    names = list(dict.fromkeys([*spec.baselines, *(targets or by_role(family_name, "kernel"))]))
    kernels = {name: load(name, family_name) for name in names}
    defaults = spec.gpu_shapes if dev.type == "cuda" else spec.cpu_shapes
    if variants and not any(":" in shape for shape in defaults):
        raise HarnessError(f"family {family_name!r} has no input variants (--ids)")
    try:
        cases = [(shape, spec.make_inputs(shape, dev))
                 for shape in with_variants(list(shapes or defaults), list(variants), defaults)]
    except ValueError:
        raise HarnessError(f"--shape takes {spec.shape_help}; got {shapes or defaults}"
                           + (f" with --ids {variants}" if variants else "")) from None
    bandwidth = copy_bandwidth(dev)
    calls = 50 if dev.type == "cuda" else 5
    rows = []
    for shape, inputs in cases:
        floor = spec.floor_bytes(inputs)
        calls_of = {name: (lambda work, seed, fn=k.fn: family.call(fn, work, seed))
                    for name, k in kernels.items()}
        eager = {name: median_ms(call, inputs, calls) for name, call in calls_of.items()}
        times = {name: median_ms(call, inputs, calls, graph=True)
                 for name, call in calls_of.items()} if cuda_graph else eager
        for name, ms in times.items():
            rows.append({"shape": shape, "kernel": name, "median_ms": ms,
                         "eager_ms": eager[name], "timing": "graph" if cuda_graph else "eager",
                         "GB_per_s": floor / (ms * 1e-3) / 1e9,
                         "pct_of_floor": 100 * (floor / bandwidth) / (ms * 1e-3),
                         **{f"vs_{base}": times[base] / ms for base in spec.baselines}})
    header = (f"device {torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'cpu'}, "
              f"copy bandwidth {bandwidth / 1e12:.2f} TB/s (read + write), median of {calls}"
              + (" CUDA-graph replays (eager calls beside)" if cuda_graph else "")
              + ", GB/s and % of floor counted on the floor's bytes")
    ratios = " | ".join(f"x {base}" for base in spec.baselines)
    timed = "graph ms | eager ms" if cuda_graph else "median ms"
    lines = [header, "", f"| {spec.shape_help} | kernel | {timed} | GB/s | % of floor | "
             f"{ratios} |", "|---" * (5 + cuda_graph + len(spec.baselines)) + "|"]
    lines += [f"| {r['shape']} | {r['kernel']} | {_ms(r['median_ms'])} | "
              + (f"{_ms(r['eager_ms'])} | " if cuda_graph else "")
              + f"{r['GB_per_s']:.1f} | {r['pct_of_floor']:.0f}% | "
              + " | ".join(f"{r[f'vs_{base}']:.2f}" for base in spec.baselines) + " |"
              for r in rows]
    lines = [line.replace("nan%", "-").replace("| nan ", "| - ") for line in lines]
    table = "\n".join(lines) + "\n"
    print(table)
    atomic_write(report_dir / "bench.md", table)
    atomic_write(report_dir / "bench.json", json.dumps({"header": header, "rows": rows},
                                                         indent=2) + "\n")
    return 0


def _ms(value: float) -> str:
    return "-" if value != value else f"{value:.4f}"
