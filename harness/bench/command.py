"""``sampling-harness bench FAMILY``: per shape and kernel, the median time and its spread,
the effective bandwidth, the percentage of the memory floor (and of the measured read
ceiling with ``--ceiling``) and the ratio to each of the family's baselines; printed as a
Markdown table and written to bench.md and bench.json (strict JSON: null, never NaN).

The floor is the fewest bytes a kernel of the family must move (the family's
``floor_bytes``: for ``sample``, probs read once and the ids written) at the copy bandwidth
measured on the same device (bytes read + written by a large device-to-device copy). The
ceiling (harness/bench/ceiling.py) is the fastest reader of as many bytes, arranged in the
shape's rows: no kernel that reads its input can beat it.

Every figure is one *entry* (shape, kernel, launch setting) timed by sampling_harness.bench.timing
in
isolation: fresh inputs (the same values for every kernel of a shape), its own warm-up, its
own CUDA graph, memory released afterwards; so a figure is the same whether its shape is
timed alone or in the full table. The repeats go round the entries (repeat 1 of every
entry, then repeat 2 ...), and each figure shows the median and the min-max of its repeats.

``--cuda-graph`` times the replay of a CUDA graph of one call (what an engine's decode
step pays, launch cost apart), the eager figure beside it; a kernel that cannot be
captured keeps its eager figure and gets the reason instead of a graph figure (in the
table's notes). ``--kernel`` adds any target beside the family's own kernels (its registered
kernels under test) and its baselines; ``--launch KEY=V1,V2`` times the kernels under each
launch setting (harness/bench/launch.py) beside their default, the ``--kernel`` targets when
given, else the family's own kernels, and checks that the setting leaves the output
unchanged. The baselines are the family's (``BenchSpec.baselines``), then its registered
peers that run on the device (FlashInfer's samplers, where flashinfer imports): each gets a
column of ratios, its time over the row's. A shape may name a variant of the inputs after a
colon (logprobs: ``256x151936x21:top``); a shape without one is timed in each variant of the
family's default shapes, or in those ``--ids`` names.

``run_bench(options)`` takes the run as one ``BenchOptions``; the CLI builds it from its
namespace (``BenchOptions.from_args``), a script or test directly.
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import dataclass
from pathlib import Path

import torch

from sampling_harness.bench.launch import bind, label, parse_grid
from sampling_harness.bench.timing import Spread, profile_table, release, same_output, time_entry
from sampling_harness.device import resolve_device
from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES
from sampling_harness.families.registry import entries as registered
from sampling_harness.families.registry import load
from sampling_harness.options import RunOptions
from sampling_harness.report.writers import atomic_write


@dataclass(frozen=True)
class BenchOptions:
    """One ``sampling-harness bench`` run: what it times and how (``from_args``: the CLI's
    flags, in the order of its subparser)."""

    family: str
    report_dir: Path
    kernels: tuple[str, ...] = ()       # --kernel: targets beside the family's own kernels
                                        # and baselines
    device: str = "auto"
    shapes: tuple[str, ...] = ()        # --shape (none: the family's defaults)
    variants: tuple[str, ...] = ()      # --ids: input variants (logprobs: top, random)
    cuda_graph: bool = False
    repeat: int = 3                     # isolated repeats of each figure
    calls: int | None = None            # timed calls a repeat (None: 50 on a GPU, 5 on a CPU)
    launch: tuple[str, ...] = ()        # --launch KEY=V[,V...] items (the grid)
    ceiling: bool = False
    profile: bool = False

    def __post_init__(self):
        if self.repeat < 1 or (self.calls is not None and self.calls < 1):
            raise HarnessError(f"--repeat and --calls take a positive count; got "
                               f"{self.repeat}, {self.calls}")

    @classmethod
    def from_args(cls, args, report_dir: Path) -> BenchOptions:
        """The options of the CLI's ``bench`` namespace, writing to ``report_dir`` (the run
        options it shares with ``check``, ``--kernel`` and ``--device``, as ``RunOptions``)."""
        shared = RunOptions.from_namespace(args)
        return cls(family=args.family, report_dir=Path(report_dir), kernels=shared.kernel,
                   device=shared.device, shapes=tuple(args.shape), variants=tuple(args.ids),
                   cuda_graph=args.cuda_graph, repeat=args.repeat, calls=args.calls,
                   launch=tuple(args.launch), ceiling=args.ceiling, profile=args.profile)


def copy_bandwidth(device: torch.device, repeat: int = 3) -> float:
    """Bytes per second of a large device copy, counting bytes read and written (graph
    replay on a GPU, the median of ``repeat`` isolated repeats)."""
    cuda = device.type == "cuda"
    n = (1 << 28) if cuda else (1 << 20)
    figures = tuple(time_entry(lambda work, _seed: work["dst"].copy_(work["src"]),
                               lambda: {"src": torch.ones(n, device=device),
                                        "dst": torch.empty(n, device=device)},
                               device, 20 if cuda else 3, graph=cuda)[1]
                    for _ in range(repeat))
    return 2 * n * 4 / (Spread(figures).median * 1e-3)


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


def finite(value):
    """``value`` with every non-finite float replaced by None, through dicts and lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def strict_json(document: dict) -> str:
    """``document`` as strict JSON: null where a figure is missing, never NaN or Infinity."""
    return json.dumps(finite(document), indent=2, allow_nan=False) + "\n"


def figures(spread: Spread | None, floor: int, bandwidth: float, ceiling: float | None,
            prefix: str = "") -> dict:
    """A row's figures from one timing's spread: median, min, max, repeats (ms), GB/s on the
    floor's bytes, percent of the floor and of the ceiling (None where not measured)."""
    if spread is None:
        return {f"{prefix}median_ms": None, f"{prefix}min_ms": None, f"{prefix}max_ms": None,
                f"{prefix}repeats_ms": [], f"{prefix}GB_per_s": None,
                f"{prefix}pct_of_floor": None, f"{prefix}pct_of_ceiling": None}
    seconds = spread.median * 1e-3
    return {f"{prefix}median_ms": spread.median, f"{prefix}min_ms": spread.low,
            f"{prefix}max_ms": spread.high, f"{prefix}repeats_ms": list(spread.repeats),
            f"{prefix}GB_per_s": floor / seconds / 1e9 if seconds > 0 else None,
            f"{prefix}pct_of_floor": 100 * floor / bandwidth / seconds if seconds > 0 else None,
            f"{prefix}pct_of_ceiling": (100 * floor / ceiling / seconds
                                        if ceiling and seconds > 0 else None)}


def build_rows(entries: list[dict], eager: dict, graph: dict, reasons: dict, floors: dict,
               bandwidth: float, ceilings: dict, baselines: tuple[str, ...],
               cuda_graph: bool) -> list[dict]:
    """One JSON row per entry. ``eager``/``graph``: entry key -> list of repeat figures
    (graph figures may hold a reason string); ``reasons``: entry key -> why it has no
    figure (the call raised, or the graph could not be captured)."""
    rows = []
    for entry in entries:
        key, shape = entry["key"], entry["shape"]
        floor, ceiling = floors[shape], ceilings.get(shape)
        eager_spread = Spread(tuple(eager[key])) if eager.get(key) else None
        reason = reasons.get(key) or next(
            (f for f in graph.get(key, []) if isinstance(f, str)), None)
        graph_spread = (Spread(tuple(graph[key])) if cuda_graph and graph.get(key)
                        and reason is None else None)   # one repeat not captured: none is
        main = graph_spread if cuda_graph else eager_spread
        row = {"shape": shape, "kernel": entry["kernel"], "launch": entry["setting"],
               "timing": "graph" if cuda_graph else "eager", "reason": reason,
               "floor_bytes": floor, **figures(main, floor, bandwidth, ceiling)}
        if cuda_graph:
            row |= figures(eager_spread, floor, bandwidth, ceiling, prefix="eager_")
        if "same_as_default" in entry:
            row["same_as_default"] = entry["same_as_default"]
        rows.append(row)
    for row in rows:
        for base in baselines:
            ref = next((r for r in rows if r["shape"] == row["shape"] and r["kernel"] == base
                        and not r["launch"]), None) or {}
            basis = "eager" if cuda_graph and ref.get("median_ms") is None else row["timing"]
            theirs = ref.get("eager_median_ms" if basis != row["timing"] else "median_ms")
            ok = theirs and row["median_ms"]
            row[f"vs_{base}"] = theirs / row["median_ms"] if ok else None
            row[f"vs_{base}_basis"] = basis if ok else None
    return rows


def _cell(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _pct(value) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _spread(row: dict, prefix: str = "") -> str:
    low, high = row[f"{prefix}min_ms"], row[f"{prefix}max_ms"]
    return "-" if low is None else f"{low:.4f}-{high:.4f}"


def render(header: str, rows: list[dict], shape_help: str, baselines: tuple[str, ...],
           cuda_graph: bool, ceiling: bool) -> str:
    """The Markdown table, then one numbered note per row without a figure (its reason)."""
    launch = any(r["launch"] for r in rows)
    timed = "graph ms | spread | eager ms | spread" if cuda_graph else "median ms | spread"
    columns = ([shape_help, "kernel"] + (["launch"] if launch else []) + [timed, "GB/s",
               "% of floor"] + (["eager % of floor"] if cuda_graph else [])
               + (["% of ceiling"] if ceiling else []) + [f"x {b}" for b in baselines]
               + (["= default"] if launch else []))
    width = sum(c.count("|") + 1 for c in columns)
    lines = [header, "", "| " + " | ".join(columns) + " |", "|---" * width + "|"]
    notes = []
    for r in rows:
        main = _cell(r["median_ms"], ".4f")
        if r["reason"]:
            notes.append(f"[{len(notes) + 1}] {r['kernel']} at {r['shape']}"
                         f"{' (' + label(r['launch']) + ')' if launch else ''}: {r['reason']}")
            main = f"no figure [{len(notes)}]"
        cells = [r["shape"], r["kernel"]] + ([label(r["launch"])] if launch else [])
        cells += [main, _spread(r)]
        if cuda_graph:
            cells += [_cell(r["eager_median_ms"], ".4f"), _spread(r, "eager_")]
        cells += [_cell(r["GB_per_s"], ".1f"), _pct(r["pct_of_floor"])]
        if cuda_graph:
            cells.append(_pct(r["eager_pct_of_floor"]))
        if ceiling:
            cells.append(_pct(r["pct_of_ceiling"]))
        cells += [_cell(r[f"vs_{b}"], ".2f") + ("*" if r[f"vs_{b}_basis"] == "eager"
                                                 and cuda_graph else "") for b in baselines]
        if launch:
            cells.append({True: "yes", False: "NO", None: "-"}[r.get("same_as_default")])
        lines.append("| " + " | ".join(cells) + " |")
    if any(r[f"vs_{b}_basis"] == "eager" for r in rows for b in baselines) and cuda_graph:
        notes.append("* against the baseline's eager figure: the baseline has no graph figure")
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def _entries(family, kernels: dict, tuned, shapes: list[str], grid: list[dict]) -> list[dict]:
    """(shape, kernel, setting) entries: every kernel at its default, those of ``tuned``
    then at each setting of the grid."""
    entries = []
    for shape in shapes:
        for name, kernel in kernels.items():
            settings = [{}] if name not in tuned else list(
                {label(s): s for s in [{}, *grid]}.values())
            for setting in settings:
                fn = bind(name, kernel.fn, family.parameters, setting)
                entries.append({"key": (shape, name, label(setting)), "shape": shape,
                                "kernel": name, "setting": setting,
                                "call": (lambda work, seed, fn=fn: family.call(fn, work, seed))})
    return entries


def _compare_settings(entries: list[dict], make_inputs, device: torch.device) -> None:
    """Mark each non-default setting's entry with whether its output at one seed equals its
    kernel's default output on the same inputs (a launch setting must not change it)."""
    for shape in dict.fromkeys(e["shape"] for e in entries if e["setting"]):
        inputs = make_inputs(shape)
        default = {}
        for entry in (e for e in entries if e["shape"] == shape):
            work = {k: v.clone() if isinstance(v, torch.Tensor) else v
                    for k, v in inputs.items()}
            try:
                out = entry["call"](work, 5)
            except Exception:   # noqa: BLE001 - the timing pass records the reason
                continue
            if not entry["setting"]:
                default[entry["kernel"]] = out
            elif entry["kernel"] in default:
                entry["same_as_default"] = same_output(out, default[entry["kernel"]])
        del inputs, default
        release(device)


def bench_baselines(family: str, declared: tuple[str, ...], device: str
                    ) -> tuple[tuple[str, ...], list[str]]:
    """The baselines a bench of ``family`` on ``device`` compares every row with: the
    family's declared ones (``BenchSpec.baselines``), then its registered peers that run on
    ``device`` (another project's kernel, FlashInfer's, where it imports); and a note for
    each registered peer that does not run there."""
    peers = [(name, e.peer) for name, e in registered(family).items() if e.peer is not None]
    return (declared + tuple(name for name, peer in peers if device in peer.devices),
            [f"{name} not timed: it runs on {', '.join(peer.devices)} only"
             for name, peer in peers if device not in peer.devices])


def timed_kernels(family: str, baselines: tuple[str, ...], targets: tuple[str, ...] = ()
                  ) -> tuple[dict, list[str]]:
    """The kernels a bench of ``family`` times, by name, in the table's order: its
    baselines, its own kernels (the registered kernels under test), then ``targets`` (the
    ``--kernel`` ones); and a note for each own kernel left out. An own kernel that cannot
    be loaded (Triton not installed) ends a run without targets; beside targets it is left
    out with the reason."""
    kernels = {name: load(name, family, command="bench") for name in baselines}
    left_out = []
    for name, entry in registered(family).items():
        if name in kernels or entry.declared is not None:      # a declared mutant
            continue
        try:
            if entry.role == "kernel":
                kernels[name] = load(name, family, command="bench")
        except HarnessError as exc:
            if not targets:
                raise
            left_out.append(f"{name} not timed: {exc}")
    for target in targets:
        kernels.setdefault(target, load(target, family, command="bench"))
    return kernels, left_out


def time_entries(entries: list[dict], make_inputs, device: torch.device, calls: int,
                 repeat: int, cuda_graph: bool, check=None) -> tuple[dict, dict, dict]:
    """Time every entry ``repeat`` times, round the entries: (eager, graph, reasons) as
    ``build_rows`` takes them. An entry whose call raises gets the reason and no further
    repeat. Under ``cuda_graph``, an entry whose capture failed keeps its eager figure,
    gets the reason in its graph figures, and is timed eager only in its later repeats (a
    failed capture is not tried again)."""
    eager, graph, reasons = {}, {}, {}
    for _ in range(repeat):
        for entry in entries:
            key = entry["key"]
            if key in reasons:
                continue
            try_graph = cuda_graph and not any(isinstance(g, str) for g in graph.get(key, []))
            try:
                e, g = time_entry(entry["call"], lambda s=entry["shape"]: make_inputs(s),
                                  device, calls, graph=try_graph, check=check)
            except Exception as exc:   # noqa: BLE001 - a kernel that raises gets a reason
                first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
                reasons[key] = f"the call raised {type(exc).__name__}: {first}"
                release(device)
                continue
            eager.setdefault(key, []).append(e)
            if try_graph or not cuda_graph:
                graph.setdefault(key, []).append(g)
    return eager, graph, reasons


def run_bench(options: BenchOptions) -> int:
    """Time ``options``' entries, print the table and write bench.md and bench.json (and
    bench-profile.md with ``profile``) to its report directory; 0, or a HarnessError."""
    family_name, report_dir = options.family, options.report_dir
    cuda_graph, variants, repeat = options.cuda_graph, options.variants, options.repeat
    if family_name not in FAMILIES:
        raise HarnessError(f"unknown family {family_name!r}; known: {', '.join(FAMILIES)}")
    family = FAMILIES[family_name]
    spec = family.bench
    if spec is None:
        raise HarnessError(f"family {family_name!r} has no benchmark")
    dev = resolve_device(options.device)
    if cuda_graph and dev.type != "cuda":
        raise HarnessError("--cuda-graph needs a CUDA device")
    grid = [s for s in parse_grid(list(options.launch)) if s]
    baselines, off_device = bench_baselines(family_name, spec.baselines, dev.type)
    kernels, left_out = timed_kernels(family_name, baselines, options.kernels)
    left_out = off_device + left_out
    tuned = set(options.kernels or (name for name in kernels if name not in baselines))
    defaults = spec.gpu_shapes if dev.type == "cuda" else spec.cpu_shapes
    if variants and not any(":" in shape for shape in defaults):
        raise HarnessError(f"family {family_name!r} has no input variants (--ids)")
    cases = with_variants(list(options.shapes or defaults), list(variants), defaults)

    drawn_inputs: dict = {}

    def make_inputs(shape: str) -> dict:
        """The same inputs for every entry, drawn on the CPU once per shape (seeded by the
        shape: the same values each time) and copied afresh for each entry and repeat: a
        kernel whose capture raised may leave the device's default generator in its capture
        state ("Offset increment outside graph capture"), which must not fail the next
        entry; and drawing 256 x 4 rows of 151936 probabilities takes the CPU seconds."""
        if shape not in drawn_inputs:
            torch.manual_seed(zlib.crc32(shape.encode()))
            drawn_inputs[shape] = spec.make_inputs(shape, torch.device("cpu"))
        return {name: value.to(dev, copy=True) if isinstance(value, torch.Tensor) else value
                for name, value in drawn_inputs[shape].items()}

    floors, rows_of = {}, {}
    for shape in cases:
        try:
            inputs = make_inputs(shape)
        except ValueError:
            raise HarnessError(f"--shape takes {spec.shape_help}; got {shape!r}"
                               + (f" with --ids {variants}" if variants else "")) from None
        floors[shape] = spec.floor_bytes(inputs)
        largest = max((v for v in inputs.values() if isinstance(v, torch.Tensor)),
                      key=torch.Tensor.numel)
        rows_of[shape] = largest.shape[0] if largest.dim() else 1
        del inputs, largest
        release(dev)
    entries = _entries(family, kernels, tuned, cases, grid)
    if grid:
        _compare_settings(entries, make_inputs, dev)
    bandwidth = copy_bandwidth(dev)
    ceilings, readers = {}, {}
    if options.ceiling:
        from sampling_harness.bench.ceiling import read_ceiling
        for shape in cases:
            rows = rows_of[shape]
            shape_of_read = rows, max(1, -(-floors[shape] // (4 * rows)))
            if shape_of_read not in readers:
                readers[shape_of_read] = read_ceiling(*shape_of_read, dev)
            ceilings[shape] = readers[shape_of_read][0]
    calls = options.calls or (50 if dev.type == "cuda" else 5)
    eager, graph, reasons = time_entries(entries, make_inputs, dev, calls, repeat, cuda_graph,
                                         family.validate)
    rows = build_rows(entries, eager, graph, reasons, floors, bandwidth, ceilings,
                      baselines, cuda_graph)
    device_name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    header = (f"device {device_name}, "
              f"copy bandwidth {bandwidth / 1e12:.2f} TB/s (read + write); each figure the "
              f"median (and min-max) of {repeat} isolated repeats, each the median of {calls} "
              + ("CUDA-graph replays (eager calls beside)" if cuda_graph else "calls")
              + "; GB/s and % counted on the floor's bytes"
              + "".join(f"; ceiling {rows}x{cols}: {bw / 1e12:.2f} TB/s by {name}"
                        for (rows, cols), (bw, name) in readers.items()))
    table = render(header, rows, spec.shape_help, baselines, cuda_graph, options.ceiling)
    table += "".join(f"\n{note}\n" for note in left_out)
    print(table)
    atomic_write(report_dir / "bench.md", table)
    if options.profile:
        profiles = "".join(
            f"## {e['kernel']} at {e['shape']} ({label(e['setting'])})\n\n"
            + profile_table(e["call"], lambda s=e["shape"]: make_inputs(s), dev) + "\n"
            for e in entries if e["key"] not in reasons)
        print(profiles)
        atomic_write(report_dir / "bench-profile.md", profiles)
    atomic_write(report_dir / "bench.json", strict_json({
        "header": header, "device": dev.type, "device_name": device_name, "repeat": repeat,
        "calls": calls, "cuda_graph": cuda_graph, "baselines": list(baselines),
        "copy_bandwidth_bytes_per_s": bandwidth,
        "ceilings": [{"rows": r, "cols": c, "bytes_per_s": bw, "reader": name}
                     for (r, c), (bw, name) in readers.items()],
        "rows": rows}))
    return 0
