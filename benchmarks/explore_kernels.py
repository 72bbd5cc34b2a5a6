"""Candidate launch settings of the Triton kernels, timed side by side in one process (CUDA):
each (family, kernel, shape, setting) one isolated entry of sampling_harness.bench.timing
(fresh inputs, its own warm-up and CUDA graph, the L2 flushed before every call; the graph
replay's median and the eager median), the graph figure as a share of the read ceiling of
the shape (harness/bench/ceiling.py, on the family's floor bytes), the output checked
against the default setting's. With --sass, the SASS opcode counts of each setting's
compiled kernels (cuobjdump), to see what a setting changes in the instruction mix. With
--profile, the device time of each kernel of a call (torch.profiler), per family and input.

Usage: python3 benchmarks/explore_kernels.py [--only SUBSTRING] [--calls N] [--sass]
       python3 benchmarks/explore_kernels.py --profile
Prints compact Markdown tables, one line per entry as it is timed."""

from __future__ import annotations

import argparse
import collections
import time
import zlib

import torch

from sampling_harness.bench.launch import bind, label
from sampling_harness.bench.timing import flush_buffer, release, same_output, time_entry
from sampling_harness.families import FAMILIES
from sampling_harness.families.registry import load

LOGPROBS = [{}, {"block": 1024}, {"warps": 2}, {"stages": 3}, {"programs_per_sm": 8}]
TOP_LOGPROBS = [{}, {"prune_limit": -1}]
REJECTION = [{}, {"programs_per_sm": 8}]
SAMPLE_LOGITS = [{}, {"group_block": 4096}]
# (family, kernel, shapes, settings)
PLAN = [
    ("logprobs", "triton-logprobs", ["256x151936x21:random", "32x128256x21:random"], LOGPROBS),
    ("logprobs", "triton-logprobs", ["256x151936x21:top"], TOP_LOGPROBS),
    ("rejection", "triton-rejection", ["256x4x151936", "32x4x128256", "1x4x32000"], REJECTION),
    ("sample-logits", "triton-sample-logits", ["256x151936"], SAMPLE_LOGITS),
]
PROFILE = [("sample-logits", f"256x151936{f}") for f in
           ("", ":top-p", ":flat-top-p", ":greedy", ":plain")] + [
    ("sample-logits", "32x128256"), ("sample-logits", "1x32000"),
    ("rejection", "256x4x151936"), ("logprobs", "256x151936x21:random"),
    ("sample", "256x151936")]
KERNEL_OF = {"sample": "triton-exact", "logprobs": "triton-logprobs",
             "sample-logits": "triton-sample-logits", "rejection": "triton-rejection"}


_DRAWN: dict = {}


def make_inputs(family: str, shape: str, device: torch.device) -> dict:
    """The bench's inputs (drawn once on the CPU with the bench's seed, then copied)."""
    if (family, shape) not in _DRAWN:
        torch.manual_seed(zlib.crc32(shape.encode()))
        _DRAWN[family, shape] = FAMILIES[family].bench.make_inputs(shape, torch.device("cpu"))
    return {k: v.to(device, copy=True) if isinstance(v, torch.Tensor) else v
            for k, v in _DRAWN[family, shape].items()}


def read_shape(family: str, shape: str, device: torch.device) -> tuple[int, tuple[int, int]]:
    """(floor bytes, (rows, cols) of the ceiling's read) as the bench computes them."""
    inputs = make_inputs(family, shape, device)
    floor = FAMILIES[family].bench.floor_bytes(inputs)
    largest = max((v for v in inputs.values() if isinstance(v, torch.Tensor)),
                  key=torch.Tensor.numel)
    rows = largest.shape[0] if largest.dim() else 1
    del inputs, largest
    release(device)
    return floor, (rows, max(1, -(-floor // (4 * rows))))


class Compiled:
    """The compiled kernels launched while active (JITFunction.run's return values)."""

    def __init__(self):
        from triton.runtime.jit import JITFunction
        self.cls, self.original, self.seen = JITFunction, JITFunction.run, {}

    def __enter__(self):
        original, seen = self.original, self.seen

        def spy(jit, *args, grid, warmup, **kwargs):
            out = original(jit, *args, grid=grid, warmup=warmup, **kwargs)
            seen.setdefault(jit.fn.__name__, out)
            return out

        self.cls.run = spy
        return self

    def __exit__(self, *exc):
        self.cls.run = self.original


OPCODES = ("FSET", "FSETP", "FSEL", "SEL", "FADD", "FMUL", "FFMA", "IADD3", "ISETP", "MUFU",
           "FMNMX", "SHFL", "LDG", "BAR")


def opcodes(compiled) -> str:
    """Total SASS instructions of a compiled kernel and the counts of OPCODES (cuobjdump,
    the one Triton ships)."""
    import subprocess
    import tempfile

    from sass_histogram import histogram
    from triton import knobs
    try:
        with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
            cubin.write(compiled.asm["cubin"])
            cubin.flush()
            sass = subprocess.run([knobs.nvidia.cuobjdump.path, "-sass", cubin.name],
                                  capture_output=True, text=True, check=True).stdout
        ops = histogram(sass)
    except Exception as exc:     # noqa: BLE001 - no cuobjdump: say so
        return f"(no SASS: {type(exc).__name__}: {str(exc)[:80]})"
    return f"{sum(ops.values())} instr; " + " ".join(f"{op}:{ops.get(op, 0)}" for op in OPCODES)


def tiny(family: str, shape: str) -> str:
    """A CPU-sized stand-in for ``shape`` (--smoke: the plumbing, under the interpreter)."""
    variant = shape.partition(":")[2]
    small = {"logprobs": "4x4099x21", "rejection": "4x2x4099"}.get(family, "4x4099")
    return f"{small}:{variant}" if variant else small


def variants(args, device: torch.device) -> None:
    ceilings = {}
    print("| family | shape | setting | graph ms | eager ms | % of ceiling | eager/graph | "
          "= default |")
    print("|---|---|---|---|---|---|---|---|")
    for family, name, shapes, settings in PLAN:
        fam = FAMILIES[family]
        kernel = load(name, family, command="bench")
        for shape in dict.fromkeys(tiny(family, s) if args.smoke else s for s in shapes):
            if args.only and args.only not in f"{family} {shape}":
                continue
            floor, read = read_shape(family, shape, device)
            if read not in ceilings:
                from sampling_harness.bench.ceiling import read_ceiling
                ceilings[read] = read_ceiling(*read, device)[0]
            default_out = None
            for setting in settings:
                fn = bind(name, kernel.fn, fam.parameters, setting)

                def call(work, seed, fn=fn, fam=fam):
                    return fam.call(fn, work, seed)

                def fresh(family=family, shape=shape):
                    return make_inputs(family, shape, device)

                started = time.perf_counter()
                try:
                    inputs = make_inputs(family, shape, device)
                    with Compiled() as compiled:
                        out = call(inputs, 5)
                    same = "-" if default_out is None else \
                        ("yes" if same_output(out, default_out) else "NO")
                    if not setting:
                        default_out = out
                    del inputs
                    eager, graph = time_entry(call, fresh, device, args.calls,
                                              graph=device.type == "cuda", check=fam.validate)
                except Exception as exc:      # noqa: BLE001 - one failure must not end the run
                    print(f"| {family} | {shape} | {label(setting)} | failed: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]} |", flush=True)
                    release(device)
                    continue
                if isinstance(graph, str):
                    print(f"| {family} | {shape} | {label(setting)} | {graph[:80]} |")
                    continue
                pct = 100 * floor / ceilings[read] / (graph * 1e-3)
                print(f"| {family} | {shape} | {label(setting)} | {graph:.4f} | {eager:.4f} | "
                      f"{pct:.0f}% | {eager / graph:.2f} | {same} | "
                      f"({time.perf_counter() - started:.0f} s)", flush=True)
                if args.sass:
                    for kname, ck in compiled.seen.items():
                        print(f"    {kname}: {opcodes(ck)}", flush=True)
            release(device)
    print("ceilings: " + "; ".join(f"{r}x{c}: {bw / 1e12:.2f} TB/s"
                                   for (r, c), bw in ceilings.items()))


def device_profile(args, device: torch.device) -> None:
    """Per family and input, the device time of each kernel of one call (mean of 10 calls,
    the L2 flushed before each)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    flush = flush_buffer(device)
    print("| family | shape | kernel | calls | device us each |\n|---|---|---|---|---|")
    for family, shape in PROFILE:
        shape = tiny(family, shape) if args.smoke else shape
        if args.only and args.only not in f"{family} {shape}":
            continue
        fam = FAMILIES[family]
        fn = load(KERNEL_OF[family], family, command="bench").fn
        try:
            inputs = make_inputs(family, shape, device)
            for i in range(3):
                fam.call(fn, inputs, i)
            cuda = device.type == "cuda"
            with torch_profile(activities=[ProfilerActivity.CUDA if cuda
                                           else ProfilerActivity.CPU]) as prof:
                for i in range(10):
                    flush.zero_()
                    fam.call(fn, inputs, 100 + i)
                if cuda:
                    torch.cuda.synchronize()
            totals = collections.defaultdict(lambda: [0, 0.0])
            for evt in prof.key_averages():
                us = getattr(evt, "device_time_total", None) if device.type == "cuda" \
                    else evt.cpu_time_total
                us = us if us is not None else getattr(evt, "cuda_time_total", 0.0)
                if evt.key.startswith("_") and us:
                    totals[evt.key][0] += evt.count
                    totals[evt.key][1] += us
            for key, (count, us) in totals.items():
                print(f"| {family} | {shape} | {key} | {count // 10} | {us / count:.1f} |",
                      flush=True)
            del inputs
        except Exception as exc:     # noqa: BLE001
            print(f"| {family} | {shape} | failed: {type(exc).__name__}: {exc} |")
        release(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--sass", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--smoke", action="store_true",
                        help="CPU-sized shapes on the CPU (TRITON_INTERPRET=1): the plumbing")
    args = parser.parse_args()
    device = torch.device("cpu" if args.smoke else "cuda")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"{name}, torch {torch.__version__}")
    if args.profile:
        device_profile(args, device)
    else:
        variants(args, device)


if __name__ == "__main__":
    main()
