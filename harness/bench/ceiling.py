"""The read ceiling: how close to the memory floor can any kernel that reads a [B, C]
float32 matrix once get on this device? ``sampling-harness bench --ceiling`` judges each
kernel's time against it: a sampler or a logprobs kernel must at least read its input, so
a kernel that reads it and does nothing else (a row sum) is an upper bound for all of them.

Readers: torch.sum and torch.amax over the last dimension, and on a GPU a Triton row-sum
kernel over a small grid of launches (columns a step, warps, programs per SM, software-
pipeline stages); the fastest reader is the ceiling. Each is timed by sampling_harness.bench.timing
like
any bench entry (isolated repeats, L2 flushed, CUDA-graph replay on a GPU).
"""

from __future__ import annotations

import itertools

import torch

from sampling_harness.bench.timing import Spread, time_entry

try:                        # Triton is optional on a CPU: the ceiling then has torch readers
    import triton
    import triton.language as tl
except ImportError:         # pragma: no cover - the project's environments have Triton
    triton = None

TRITON_GRID = ((2048, 4096), (4, 8), (4, 8), (2, 3))   # BLOCK, warps, per SM, stages

if triton is not None:
    @triton.jit
    def _row_sum(x_ptr, out_ptr, V, CHUNK, BLOCK: tl.constexpr, STAGES: tl.constexpr):
        """Program (r, p) sums columns [p CHUNK, (p + 1) CHUNK) of row r. Memory traffic:
        the chunk read once (4 B CHUNK), one float32 written."""
        row, split = tl.program_id(0), tl.program_id(1)
        lo = split * CHUNK
        hi = tl.minimum(lo + CHUNK, V)
        base = x_ptr + row.to(tl.int64) * V
        acc = tl.zeros([BLOCK], tl.float32)
        for start in tl.range(lo, hi, BLOCK, num_stages=STAGES):
            cols = start + tl.arange(0, BLOCK)
            acc += tl.load(base + cols, mask=cols < hi, other=0.0)
        tl.store(out_ptr + row * tl.num_programs(1) + split, tl.sum(acc))


def row_sum(x: torch.Tensor, block: int = 4096, warps: int = 8, per_sm: int = 4,
            stages: int = 3) -> torch.Tensor:
    """Partial row sums of x [B, C] float32 (CUDA): S splits a row, S chosen so that B S is
    about ``per_sm`` programs per SM."""
    batch, cols = x.shape
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    splits = max(1, min(triton.cdiv(per_sm * sms, batch), triton.cdiv(cols, block)))
    chunk = triton.cdiv(triton.cdiv(cols, splits), block) * block
    splits = triton.cdiv(cols, chunk)
    out = torch.empty(batch, splits, dtype=torch.float32, device=x.device)
    _row_sum[(batch, splits)](x, out, cols, chunk, BLOCK=block, STAGES=stages,
                              num_warps=warps)
    return out


def readers(device: torch.device) -> dict:
    """name -> reader(x): torch.sum, torch.amax, and on a GPU the Triton launches."""
    found = {"torch.sum": lambda x: x.sum(dim=-1), "torch.amax": lambda x: x.amax(dim=-1)}
    if device.type == "cuda" and triton is not None:
        for block, warps, per_sm, stages in itertools.product(*TRITON_GRID):
            if block >= 128 * warps:
                found[f"triton row sum block={block} warps={warps} per_sm={per_sm} "
                      f"stages={stages}"] = (lambda x, s=(block, warps, per_sm, stages):
                                             row_sum(x, *s))
    return found


def read_ceiling(rows: int, cols: int, device: torch.device, calls: int = 20,
                 repeat: int = 1) -> tuple[float, str]:
    """(bytes per second, reader) of the fastest reader of a float32 [rows, cols] matrix,
    timed by graph replay on a GPU, eagerly on a CPU. A reader that fails is skipped."""
    graph = device.type == "cuda"
    best: tuple[float, str] | None = None

    def make_inputs():
        generator = torch.Generator(device=device).manual_seed(0)
        return {"x": torch.rand(rows, cols, device=device, generator=generator)}

    for name, reader in readers(device).items():
        try:
            figures = [time_entry(lambda work, _seed, r=reader: r(work["x"]), make_inputs,
                                  device, calls, graph)[1] for _ in range(repeat)]
        except Exception:   # noqa: BLE001 - a launch that fails to compile is no reader
            continue
        if any(isinstance(f, str) for f in figures):
            continue
        ms = Spread(tuple(figures)).median
        if best is None or ms < best[0]:
            best = ms, name
    if best is None:
        raise RuntimeError("no reader of the ceiling ran")
    return rows * cols * 4 / (best[0] * 1e-3), best[1]
