"""Drawing many tokens from a ``sample-logits`` kernel: rows repeated, counts on the device."""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.calls import count_cells, rows_per_call
from sampling_harness.errors import KernelFailure
from sampling_harness.suites.sample_logits.rows import Rows, cycle


def count_tokens(ctx, rows: Rows, draws) -> np.ndarray:
    """``draws`` samples of each row of ``rows`` (an int, or one count per row); token
    counts int64 [D, V]. The rows still short of their count are drawn side by side, each
    call holding them in turn: one phase per distinct count."""
    kinds, vocab = rows.kinds, rows.vocab
    need = np.broadcast_to(np.asarray(draws, dtype=np.int64), (kinds,))
    counts = torch.zeros(kinds * vocab, dtype=torch.int64, device=ctx.device)
    seeds, drawn = ctx.seeds(), 0
    for level in np.unique(need[need > 0]):
        active = np.flatnonzero(need >= level)
        per_call = rows_per_call(ctx, vocab, active.size)
        inputs = rows.inputs(ctx.device, per_call, active)
        which = cycle(active, per_call, ctx.device)
        remaining = active.size * int(level - drawn)
        while remaining > 0:
            size = min(per_call, remaining)
            batch = {name: value[:size] for name, value in inputs.items()}
            ids = ctx.runner.call(batch, next(seeds))
            count_cells(counts, which[:size] * vocab + ids)
            remaining -= size
        drawn = int(level)
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
