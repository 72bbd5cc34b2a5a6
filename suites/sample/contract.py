"""Family ``sample``: one token id per row of a probability table.

Contract: ``fn(probs, seed) -> ids``. probs: float32 [B, V], contiguous, rows >= 0 summing to
1 (zeros allowed), a fresh copy each call (the kernel may overwrite it); seed: int in
[0, 2^31). Returns int32/int64 [B] on probs' device; the same (probs, seed) give the same ids.

What a seed determines (harness/seeds.py): with an int seed, row r's id depends only
on (seed, r, probs[r]). A kernel whose metadata says ``"seeds": "per-request"`` also takes
seed as an int64 [B] tensor on probs' device, one seed per request in [0, 2^31) or -1 for an
unseeded request: then row r's id depends only on (seed[r], probs[r]), whatever its position,
the batch size and its batch-mates' rows and seeds; an unseeded row draws anew each call.

Read-only inputs: none. probs may be overwritten; a write past its ends fails the call
(harness/run/guard.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sampling_harness.checks.calls import token_ids
from sampling_harness.errors import KernelFailure


@dataclass(frozen=True)
class SampleBudget:
    """The effects the checks of family ``sample`` must detect (sample counts follow)."""

    name: str
    fit_tv: float                   # total variation (pooled bins) detected with `power`
    fit_max_bins: int               # equal-mass bins at most per row in the fit test
    fit_vocab: int                  # V of the curated batch
    generated_batches: int          # hypothesis-generated batches in the fit check
    generated_max_vocab: int
    large_vocab: int                # V of the large-vocabulary fit batch (GPU only)
    large_tv: float
    tail_scales: tuple[float, ...]  # per-token probability of the rare tokens over the head's
    tail_expected: float            # expected rare wins per scale under H0 (full sample)
    zero_draws: int                 # noise draws on zero-probability tokens (validity)
    pairs: int                      # pairs per pairing in the independence check
    power: float = 0.99


BUDGETS = {
    "smoke": SampleBudget("smoke", fit_tv=0.1, fit_max_bins=16, fit_vocab=257,
                          generated_batches=1, generated_max_vocab=100,
                          large_vocab=151936, large_tv=0.1,
                          tail_scales=(1e-2,), tail_expected=50.0,
                          zero_draws=2**22, pairs=2**10),
    "quick": SampleBudget("quick", fit_tv=0.02, fit_max_bins=32, fit_vocab=257,
                          generated_batches=2, generated_max_vocab=300,
                          large_vocab=151936, large_tv=0.05,
                          tail_scales=(1e-2, 1e-4, 1e-6), tail_expected=100.0,
                          zero_draws=2**27, pairs=2**13),
    "standard": SampleBudget("standard", fit_tv=0.002, fit_max_bins=32, fit_vocab=1031,
                             generated_batches=3, generated_max_vocab=4096,
                             large_vocab=151936, large_tv=0.01,
                             tail_scales=(1e-2, 1e-4, 1e-6, 1e-8), tail_expected=200.0,
                             zero_draws=2**34, pairs=2**17),
    "thorough": SampleBudget("thorough", fit_tv=0.001, fit_max_bins=32, fit_vocab=1031,
                             generated_batches=6, generated_max_vocab=8192,
                             large_vocab=151936, large_tv=0.005,
                             tail_scales=(1e-2, 1e-4, 1e-6, 1e-8, 1e-10), tail_expected=400.0,
                             zero_draws=2**36, pairs=2**19),
}


def validate_ids(ids: object, probs: torch.Tensor) -> torch.Tensor:
    """Check a ``sample`` kernel's output against the probs it was given; return int64 ids:
    ``token_ids``, and every id a token of positive probability (a zero-probability token
    is never a valid draw)."""
    ids = token_ids(ids, *probs.shape, probs.device)
    chosen = probs.gather(1, ids[:, None]).squeeze(1)
    forbidden = chosen <= 0
    if bool(forbidden.any()):
        row = int(forbidden.nonzero()[0, 0])
        raise KernelFailure(
            f"returned token {int(ids[row])} of probability 0 at row {row} "
            f"({int(forbidden.sum())} of {probs.shape[0]} rows drew a zero-probability token)"
        )
    return ids


def bench_probs(shape: str, device: torch.device) -> dict:
    """``BxV``: a table of peaked random rows (u^4, normalised)."""
    batch, vocab = (int(x) for x in shape.lower().split("x"))
    probs = torch.rand(batch, vocab, device=device).pow_(4)
    return {"probs": probs / probs.sum(dim=1, keepdim=True)}
