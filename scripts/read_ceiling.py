"""The read ceiling: how close to the bench's floor can ANY kernel that reads a [B, V] float32
matrix once get on this GPU? The floor (harness/bench.py) is the matrix's bytes at the copy
bandwidth (bytes read + written by a 1 GiB device copy). A kernel that reads the matrix and
does nothing else (a row sum) is an upper bound for every sampler and logprobs kernel of the
shape: their percent of the floor is judged against this ceiling.

Timed like ``sampling-harness bench`` (median of device-event times, L2 flushed before each
call, CUDA-graph replay so launch cost is left out). Rows: torch.sum / torch.amax over the
last dim, and a Triton row-sum kernel swept over its launch (BLOCK columns a step, warps,
programs per SM, software-pipeline stages). CUDA only.
Usage: python3 scripts/read_ceiling.py [B,V ...]   (default 256,151936 32,128256 1,32000)"""

import itertools
import sys

import torch
import triton
import triton.language as tl

from harness.bench import copy_bandwidth, median_ms
from kernels.split_scratch import multiprocessors


@triton.jit
def _row_sum(x_ptr, out_ptr, V, CHUNK, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """Program (r, p) sums columns [p CHUNK, (p + 1) CHUNK) of row r. Memory traffic: the
    chunk read once (4 B CHUNK), one float32 written."""
    row, split = tl.program_id(0), tl.program_id(1)
    lo = split * CHUNK
    hi = tl.minimum(lo + CHUNK, V)
    base = x_ptr + row.to(tl.int64) * V
    acc = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(lo, hi, BLOCK, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(base + cols, mask=cols < hi, other=0.0)
    tl.store(out_ptr + row * tl.num_programs(1) + split, tl.sum(acc))


def row_sum(x: torch.Tensor, block: int, warps: int, per_sm: int, stages: int) -> torch.Tensor:
    """Row sums of x [B, V] from S partials, S chosen so B S ~ per_sm programs per SM."""
    batch, vocab = x.shape
    splits = max(1, min(triton.cdiv(per_sm * multiprocessors(x.device), batch),
                        triton.cdiv(vocab, block)))
    chunk = triton.cdiv(triton.cdiv(vocab, splits), block) * block
    splits = triton.cdiv(vocab, chunk)
    out = torch.empty(batch, splits, dtype=torch.float32, device=x.device)
    _row_sum[(batch, splits)](x, out, vocab, chunk, BLOCK=block, STAGES=stages,
                              num_warps=warps)
    return out


def main() -> None:
    device = torch.device("cuda")
    bandwidth = copy_bandwidth(device)
    shapes = [tuple(int(v) for v in arg.split(",")) for arg in sys.argv[1:]] or [
        (256, 151936), (32, 128256), (1, 32000)]
    print(f"device {torch.cuda.get_device_name(device)}, copy bandwidth "
          f"{bandwidth / 1e12:.2f} TB/s; graph replay, L2 flushed; % of floor = the matrix "
          "read once at the copy bandwidth")
    print("| B x V | reader | ms | % of floor |\n|---|---|---|---|")
    for batch, vocab in shapes:
        sweep(batch, vocab, bandwidth, device)


def sweep(batch: int, vocab: int, bandwidth: float, device: torch.device) -> None:
    """Print the readers' rows of one shape and the best Triton launch."""
    torch.manual_seed(0)
    inputs = {"x": torch.rand(batch, vocab, device=device)}
    floor_ms = batch * vocab * 4 / bandwidth * 1e3

    def show(name, call):
        ms = median_ms(lambda work, _: call(work["x"]), inputs, 50, graph=True)
        print(f"| {batch}x{vocab} | {name} | {ms:.4f} | {100 * floor_ms / ms:.0f}% |",
              flush=True)
        return ms

    show("torch.sum", lambda x: x.sum(dim=-1))
    show("torch.amax", lambda x: x.amax(dim=-1))
    best = None
    for block, warps, per_sm, stages in itertools.product(
            (1024, 2048, 4096), (4, 8), (1, 2, 4, 8), (1, 2, 3, 4)):
        if block < 128 * warps:
            continue
        setting = block, warps, per_sm, stages
        ms = show(f"triton row sum, BLOCK {block}, {warps} warps, {per_sm}/SM, {stages} stages",
                  lambda x, s=setting: row_sum(x, *s))
        best = min(best or (ms, setting), (ms, setting))
    print(f"best Triton read at {batch}x{vocab}: {best[0]:.4f} ms = "
          f"{100 * floor_ms / best[0]:.0f}% of the floor, (BLOCK, warps, /SM, stages) = "
          f"{best[1]}", flush=True)


if __name__ == "__main__":
    main()
