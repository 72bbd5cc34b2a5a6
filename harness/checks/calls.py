"""One kernel call of a check: how many rows it may take, and the token ids it must return.

``rows_per_call``: a call holds at most ``ctx.max_call_elements`` float elements (the run's
memory bound), so R rows of V tokens take R = floor(max / V), rounded down to a multiple of
the D distributions interleaved in it (at least D).

``token_ids``: the output checks of every family that returns one token id per row
(``sample``, ``sample-logits``).

``count_cells``: counts of the calls' outcomes kept on the device.
"""

from __future__ import annotations

import torch

from sampling_harness.errors import KernelFailure


def rows_per_call(ctx, vocab: int, multiple: int = 1) -> int:
    """The most rows (a multiple of ``multiple``) one call may take within the memory bound."""
    rows = max(1, ctx.max_call_elements // vocab) // multiple * multiple
    return max(rows, multiple)


def count_cells(counts: torch.Tensor, cells: torch.Tensor,
                weights: torch.Tensor | None = None) -> None:
    """counts[cell] += 1 (or its weight) for each of ``cells``, on the device: a scatter, not
    ``torch.bincount``, which reads its input's max back to the host (a synchronisation)."""
    counts.scatter_add_(0, cells.reshape(-1), torch.ones_like(cells).reshape(-1)
                        if weights is None else weights.reshape(-1))


def token_ids(ids: object, batch: int, vocab: int, device: torch.device) -> torch.Tensor:
    """The checks every family returning one token id per row shares; return int64 ids.

    A tensor, integer dtype int32 or int64, of shape ``[B]``, on ``device``, every id in
    ``[0, V)``; anything else is a contract violation (``KernelFailure``)."""
    if not isinstance(ids, torch.Tensor):
        raise KernelFailure(f"returned {type(ids).__name__}, expected a torch.Tensor of ids")
    if ids.dtype not in (torch.int32, torch.int64):
        raise KernelFailure(f"returned dtype {ids.dtype}, expected torch.int32 or torch.int64")
    if tuple(ids.shape) != (batch,):
        raise KernelFailure(f"returned shape {tuple(ids.shape)}, expected ({batch},)")
    if ids.device != device:
        raise KernelFailure(f"returned ids on {ids.device}, expected {device}")
    ids = ids.long()
    out_of_range = (ids < 0) | (ids >= vocab)
    if bool(out_of_range.any()):
        row = int(out_of_range.nonzero()[0, 0])
        raise KernelFailure(
            f"returned id {int(ids[row])} at row {row}, outside [0, {vocab}) "
            f"({int(out_of_range.sum())} of {batch} rows out of range)"
        )
    return ids
