"""Kernel contracts: the one documented Python signature of each family, and its validation.

A kernel is any callable that meets its family's contract; the harness knows nothing else
of it. Every output is validated here before any statistic sees it, so garbage (an id out
of range, uninitialised memory, a float tensor) fails the check exactly, not statistically.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from harness.errors import KernelFailure


@dataclass(frozen=True)
class Contract:
    family: str
    parameters: tuple[str, ...]
    doc: str

    @property
    def signature(self) -> str:
        return f"fn({', '.join(self.parameters)})"


SAMPLE = Contract(
    family="sample",
    parameters=("probs", "seed"),
    doc=(
        "fn(probs: float32 [B, V] contiguous, rows >= 0 summing to 1, seed: int in [0, 2^31))"
        " -> int32/int64 [B] token ids on probs.device; same (probs, seed) -> same ids"
    ),
)

CONTRACTS = {SAMPLE.family: SAMPLE}


def validate_ids(ids: object, probs: torch.Tensor) -> torch.Tensor:
    """Check a ``sample`` kernel's output against the probs it was given; return int64 ids.

    Exact conditions, each a contract violation when broken: a tensor, of shape ``[B]``,
    integer dtype int32 or int64, on ``probs.device``, every id in ``[0, V)``, and every id
    a token of positive probability (a zero-probability token is never a valid draw).
    """
    batch, vocab = probs.shape
    if not isinstance(ids, torch.Tensor):
        raise KernelFailure(f"returned {type(ids).__name__}, expected a torch.Tensor of ids")
    if ids.dtype not in (torch.int32, torch.int64):
        raise KernelFailure(f"returned dtype {ids.dtype}, expected torch.int32 or torch.int64")
    if tuple(ids.shape) != (batch,):
        raise KernelFailure(f"returned shape {tuple(ids.shape)}, expected ({batch},)")
    if ids.device != probs.device:
        raise KernelFailure(f"returned ids on {ids.device}, expected {probs.device}")
    ids = ids.long()
    out_of_range = (ids < 0) | (ids >= vocab)
    if bool(out_of_range.any()):
        row = int(out_of_range.nonzero()[0, 0])
        raise KernelFailure(
            f"returned id {int(ids[row])} at row {row}, outside [0, {vocab}) "
            f"({int(out_of_range.sum())} of {batch} rows out of range)"
        )
    chosen = probs.gather(1, ids[:, None]).squeeze(1)
    forbidden = chosen <= 0
    if bool(forbidden.any()):
        row = int(forbidden.nonzero()[0, 0])
        raise KernelFailure(
            f"returned token {int(ids[row])} of probability 0 at row {row} "
            f"({int(forbidden.sum())} of {batch} rows drew a zero-probability token)"
        )
    return ids
