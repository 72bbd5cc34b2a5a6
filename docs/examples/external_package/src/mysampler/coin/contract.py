"""Family ``coin``: one biased coin per row.

Contract: ``fn(probs, seed) -> ids``. probs: float32 [B, 2] (tails, heads) on the device,
rows >= 0 summing to 1, read-only; seed: int in [0, 2^31). Returns int64 [B] on probs'
device: row r is 1 (heads) with probability probs[r, 1], never a side of probability 0;
the same (probs, seed) give the same ids.
"""

from dataclasses import dataclass

import torch

from sampling_harness.errors import KernelFailure


@dataclass(frozen=True)
class CoinBudget:
    """What the checks must detect at one budget name (never sample counts)."""

    name: str
    tv: float              # error in P(heads) that the fit check detects with `power`
    certain_draws: int     # flips of certain coins in the validity check
    power: float = 0.99


BUDGETS = {name: CoinBudget(name, tv, draws) for name, tv, draws in (
    ("smoke", 0.05, 2**12), ("quick", 0.01, 2**16),
    ("standard", 0.003, 2**20), ("thorough", 0.001, 2**21))}


def validate(ids: object, inputs: dict) -> torch.Tensor:
    """The exact check of every output: int64 [B] on probs' device, each id 0 or 1 and of
    positive probability. Anything else raises ``KernelFailure`` (the check fails)."""
    probs = inputs["probs"]
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.int64:
        raise KernelFailure(f"returned {getattr(ids, 'dtype', type(ids))}, expected int64")
    if ids.shape != probs.shape[:1] or ids.device != probs.device:
        raise KernelFailure(f"returned shape {tuple(ids.shape)} on {ids.device}, expected "
                            f"({probs.shape[0]},) on {probs.device}")
    if bool(((ids < 0) | (ids > 1)).any()):
        raise KernelFailure(f"returned an id outside {{0, 1}}: {ids.unique().tolist()[:5]}")
    impossible = probs.gather(1, ids[:, None]).squeeze(1) <= 0
    if bool(impossible.any()):
        row = int(impossible.nonzero()[0, 0])
        raise KernelFailure(f"row {row} came up {int(ids[row])}, a side of probability 0")
    return ids
