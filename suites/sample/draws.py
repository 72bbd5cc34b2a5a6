"""Drawing many tokens from a kernel: distributions interleaved row by row, counts on device.

A table of D distributions is laid out so that row r of every call holds distribution
r mod D: different distributions sit side by side, and a kernel that reads the wrong row
mixes them up visibly. Counts stay on the device; only the [D, V] table comes back.
"""

from __future__ import annotations

import numpy as np
import torch


def rows_per_call(ctx, vocab: int, multiple: int = 1) -> int:
    """The most rows (a multiple of ``multiple``) one call may take within the memory bound."""
    rows = max(1, ctx.max_call_elements // vocab) // multiple * multiple
    return max(rows, multiple)


def count_tokens(ctx, table: np.ndarray, draws: int) -> np.ndarray:
    """``draws`` samples of each row of ``table`` (float32 [D, V]); token counts [D, V]."""
    kinds, vocab = table.shape
    probs_table = torch.as_tensor(table, device=ctx.device)
    counts = torch.zeros(kinds * vocab, dtype=torch.int64, device=ctx.device)
    per_call = rows_per_call(ctx, vocab, kinds)
    seeds = ctx.seeds()
    remaining = kinds * draws
    while remaining > 0:
        rows = min(per_call, remaining)
        probs = probs_table.repeat(rows // kinds, 1)
        ids = ctx.runner.call({"probs": probs}, next(seeds))
        which = torch.arange(rows, device=ctx.device) % kinds
        counts += torch.bincount(which * vocab + ids, minlength=kinds * vocab)
        remaining -= rows
    return counts.view(kinds, vocab).cpu().numpy()
