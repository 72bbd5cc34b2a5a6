"""Drawing many tokens from a kernel: distributions interleaved row by row, counts on device.

A table of D distributions is laid out so that row r of every call holds distribution
r mod D: different distributions sit side by side, and a kernel that reads the wrong row
mixes them up visibly. Counts stay on the device; only the [D, V] table comes back. Under
torchrun the draws are split over the ranks and their counts summed (``count_tokens``).
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.calls import count_cells, rows_per_call
from sampling_harness.scale.distributed import Shard, merged
from sampling_harness.seeds import seed_stream


def local_token_counts(ctx, table: np.ndarray, draws: int, shard: Shard) -> torch.Tensor:
    """This rank's ``shard.size(draws)`` samples of each row of ``table`` (float32 [D, V]),
    with kernel seeds from the rank's own stream; token counts [D * V] on the device."""
    kinds, vocab = table.shape
    probs_table = torch.as_tensor(table, device=ctx.device)
    counts = torch.zeros(kinds * vocab, dtype=torch.int64, device=ctx.device)
    per_call = rows_per_call(ctx, vocab, kinds)
    seeds = seed_stream(shard.seed(ctx.seed))
    remaining = kinds * shard.size(draws)
    while remaining > 0:
        rows = min(per_call, remaining)
        probs = probs_table.repeat(rows // kinds, 1)
        ids = ctx.runner.call({"probs": probs}, next(seeds))
        which = torch.arange(rows, device=ctx.device) % kinds
        count_cells(counts, which * vocab + ids)
        remaining -= rows
    return counts


def count_tokens(ctx, table: np.ndarray, draws: int) -> np.ndarray:
    """``draws`` samples of each row of ``table`` (float32 [D, V]); token counts [D, V].

    Sharded under torchrun (``sampling_harness.scale.distributed``): each rank draws its share with
    its
    own seeds and the ranks' counts are summed on the devices, so every rank gets the
    counts of exactly ``draws`` samples per row. In one process: all of them, seeded by
    the check's seed."""
    kinds, vocab = table.shape
    counts = merged(ctx.shard, f"token counts {kinds}x{vocab}, {draws} draws",
                    lambda: local_token_counts(ctx, table, draws, ctx.shard))
    return counts.view(kinds, vocab).cpu().numpy()
