"""Where the host's time goes in one eager call of each Triton kernel (CUDA): the whole call
as the wrappers make it, each of its Triton launches replayed alone through Triton's launch
path (``kernel[grid]``),
and the same launch made directly through the compiled kernel's launcher, with the tensors
as Triton passes them (the launcher asks the driver about every pointer) and with their
addresses as ints (no such query). A direct launch's output is checked against the call's.
Host microseconds are the mean of REPS back-to-back calls after ten warm-up calls, the
device not waited for (``host_us``); an eager call whose host time exceeds its graph time
by half is what the bench's eager/graph ratio shows.

Usage: python3 benchmarks/host_cost.py [--shapes 1x32000,32x128256,256x151936] [--profile]
Prints one Markdown table of the launches, one of torch's small host costs, and with
--profile the whole calls' top functions by own time (cProfile)."""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import zlib

import torch

from sampling_harness.bench.timing import host_us
from sampling_harness.families import FAMILIES
from sampling_harness.families.registry import load
from sampling_harness.kernels.split_scratch import stream_handle

REPS = 200
KERNELS = {"sample": "triton-exact", "logprobs": "triton-logprobs",
           "sample-logits": "triton-sample-logits", "rejection": "triton-rejection"}
ALSO = {"sample": ("triton-inverse-cdf",)}          # measured too (not profiled)


def family_shape(family: str, shape: str) -> str:
    """The bench shape string of ``family`` for a BxV shape (logprobs: K = 21, random ids;
    rejection: 4 drafts a request)."""
    batch, vocab = shape.split("x")
    return {"logprobs": f"{batch}x{vocab}x21:random",
            "rejection": f"{batch}x4x{vocab}"}.get(family, shape)


def inputs_for(family: str, shape: str, device: torch.device) -> dict:
    """The bench's inputs of ``family`` at ``shape`` (drawn on the CPU, as the bench does)."""
    torch.manual_seed(zlib.crc32(shape.encode()))
    drawn = FAMILIES[family].bench.make_inputs(shape, torch.device("cpu"))
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in drawn.items()}


class Recorder:
    """Records every Triton launch (JITFunction.run, not warm-up) made while active:
    (jit function, grid, positional args, keyword args, compiled kernel)."""

    def __init__(self):
        from triton.runtime.jit import JITFunction
        self.cls, self.original, self.seen = JITFunction, JITFunction.run, []

    def __enter__(self):
        original, seen = self.original, self.seen

        def spy(jit, *args, grid, warmup, **kwargs):
            out = original(jit, *args, grid=grid, warmup=warmup, **kwargs)
            if not warmup:
                seen.append((jit, grid, args, dict(kwargs), out))
            return out

        self.cls.run = spy
        return self

    def __exit__(self, *exc):
        self.cls.run = self.original


def all_arguments(jit, args: tuple, kwargs: dict) -> list:
    """The kernel's arguments in signature order, constexprs included (what the launcher
    takes after its own leading arguments)."""
    values = list(args)
    for param in jit.params[len(args):]:
        values.append(kwargs[param.name] if param.name in kwargs else param.default)
    return values


def direct_launch(jit, grid, args, kwargs, compiled, ints: bool):
    """A callable that launches ``compiled`` through its launcher, skipping Triton's binding
    (``ints``: tensors passed as their addresses)."""
    values = all_arguments(jit, args, kwargs)
    if ints:
        values = [v.data_ptr() if isinstance(v, torch.Tensor) else v for v in values]
    g = tuple(grid) + (1,) * (3 - len(grid))
    device = torch.device("cuda", torch.cuda.current_device())

    def launch():
        compiled.run(g[0], g[1], g[2], stream_handle(device), compiled.function,
                     compiled.packed_metadata, None, None, None, *values)
    return launch


def outputs(result) -> list[torch.Tensor]:
    return [t for t in (result if isinstance(result, (tuple, list)) else [result])
            if isinstance(t, torch.Tensor)]


def direct_matches(result, launches: list) -> bool:
    """Whether replaying the recorded launches directly (ints) rewrites ``result``, the
    output of the recorded call (same seed, same buffers)."""
    torch.cuda.synchronize()
    want = [t.clone() for t in outputs(result)]
    for t in outputs(result):
        t.fill_(-7)
    for launch in launches:
        launch()
    torch.cuda.synchronize()
    return all(torch.equal(a, b) for a, b in zip(outputs(result), want, strict=True))


def measure(family: str, kernel: str, shape: str, device: torch.device) -> str:
    """One table row at the bench shape ``shape``: whole call, then per launch path the sum
    over the call's launches."""
    fam = FAMILIES[family]
    fn = load(kernel, family, command="bench").fn
    inputs = inputs_for(family, shape, device)

    def call():
        return fam.call(fn, inputs, 7)

    for _ in range(3):
        call()
    with Recorder() as rec:                       # every launch seen by JITFunction.run
        result = call()
    torch.cuda.synchronize()
    whole = host_us(call, REPS)
    bare = [lambda r=r: r[0][r[1]](*r[2], **r[3]) for r in rec.seen]
    tensors = [direct_launch(*r, ints=False) for r in rec.seen]
    ints = [direct_launch(*r, ints=True) for r in rec.seen]
    cells = [f"{whole:.1f}", str(len(rec.seen))]
    for group in (bare, tensors, ints):
        try:
            cells.append(f"{sum(host_us(f, REPS) for f in group):.1f}")
        except Exception as exc:     # noqa: BLE001 - a path that fails is reported
            cells.append(f"failed: {type(exc).__name__}: {str(exc)[:60]}")
    try:
        cells.append("yes" if direct_matches(result, ints) else "NO")
    except Exception as exc:         # noqa: BLE001
        cells.append(f"failed: {type(exc).__name__}")
    names = ",".join(dict.fromkeys(r[0].fn.__name__ for r in rec.seen))
    torch.cuda.empty_cache()
    return f"| {kernel} | {shape} | {names} | " + " | ".join(cells) + " |"


def small_costs(device: torch.device) -> list[str]:
    """Host microseconds of torch calls a wrapper may make."""
    x = torch.empty(256, 21, device=device)
    counts = [4] * 256
    steps = {
        "torch.empty((256, 21)) float32": lambda: torch.empty((256, 21), device=device),
        "torch.empty(256) int64": lambda: torch.empty(256, dtype=torch.int64, device=device),
        "x.is_contiguous()": x.is_contiguous,
        "x.contiguous() (already)": x.contiguous,
        "x.shape, x.dtype, x.device": lambda: (x.shape, x.dtype, x.device),
        "x.data_ptr()": x.data_ptr,
        "stream_handle(device)": lambda: stream_handle(device),
        "torch.cuda.current_stream(device)": lambda: torch.cuda.current_stream(device),
        "torch.cuda.is_current_stream_capturing()": torch.cuda.is_current_stream_capturing,
        "tuple(list of 256 ints)": lambda: tuple(counts),
        "x.zero_() (a torch launch)": x.zero_,
    }
    return [f"| {name} | {host_us(fn, REPS):.2f} |" for name, fn in steps.items()]


def profile(family: str, shape: str, device: torch.device) -> str:
    fam = FAMILIES[family]
    fn = load(KERNELS[family], family, command="bench").fn
    inputs = inputs_for(family, shape, device)
    for _ in range(3):
        fam.call(fn, inputs, 7)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(REPS):
        fam.call(fn, inputs, 7)
    prof.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(12)
    lines = [line for line in text.getvalue().splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return f"{KERNELS[family]} at {shape} ({REPS} calls):\n" \
           + "\n".join(lines[start:start + 13])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1x32000,32x128256,256x151936")
    parser.add_argument("--families", default=",".join(KERNELS))
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    device = torch.device("cuda")
    print(f"{torch.cuda.get_device_name(device)}: host us per call (mean of {REPS})")
    print("| kernel | shape | kernels | whole call | launches | kernel[grid] | launcher | "
          "launcher, int pointers | launcher = call |")
    print("|---|---|---|---|---|---|---|---|---|")
    for family in args.families.split(","):
        for kernel in (KERNELS[family], *ALSO.get(family, ())):
            for shape in args.shapes.split(","):
                try:
                    print(measure(family, kernel, family_shape(family, shape), device),
                          flush=True)
                except Exception as exc:     # noqa: BLE001 - one failure must not end the run
                    print(f"| {kernel} | {shape} | failed: {type(exc).__name__}: "
                          f"{str(exc)[:120]} |", flush=True)
    print("\n| torch step | host us |\n|---|---|")
    print("\n".join(small_costs(device)))
    if args.profile:
        for family in args.families.split(","):
            try:
                print("\n" + profile(family, family_shape(family, "1x32000"), device))
            except Exception as exc:     # noqa: BLE001
                print(f"\n{family}: profile failed: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
