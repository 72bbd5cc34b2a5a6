"""Drawing many tokens from a ``sample-logits`` kernel: rows repeated, counts on the device."""

from __future__ import annotations

import numpy as np
import torch

from harness.errors import KernelFailure
from suites.sample.draws import rows_per_call
from suites.sample_logits.rows import Rows


def count_tokens(ctx, rows: Rows, draws: int) -> np.ndarray:
    """``draws`` samples of each row of ``rows``; token counts int64 [D, V]."""
    kinds, vocab = rows.kinds, rows.vocab
    per_call = rows_per_call(ctx, vocab, kinds)
    inputs = rows.inputs(ctx.device, per_call)
    counts = torch.zeros(kinds * vocab, dtype=torch.int64, device=ctx.device)
    which = torch.arange(per_call, device=ctx.device) % kinds
    seeds = ctx.seeds()
    remaining = kinds * draws
    while remaining > 0:
        size = min(per_call, remaining)
        batch = {name: value[:size] for name, value in inputs.items()}
        ids = ctx.runner.call(batch, next(seeds))
        counts += torch.bincount(which[:size] * vocab + ids, minlength=kinds * vocab)
        remaining -= size
    return counts.view(kinds, vocab).cpu().numpy()


def demand_possible(rows: Rows, counts: np.ndarray) -> None:
    """Fail the kernel if it ever drew a token that no float32 resolution of the row keeps
    (outside the reference's possibly kept set): a masked token."""
    outside = (counts > 0) & (rows.law.inclusive == 0)
    if outside.any():
        row, token = (int(i[0]) for i in np.nonzero(outside))
        raise KernelFailure(
            f"drew token {token} of row {rows.names[row]!r} {int(counts[row, token])} times; "
            f"min-p / top-k / top-p mask it under every float32 resolution "
            f"({int(counts[outside].sum())} masked draws in all)")
