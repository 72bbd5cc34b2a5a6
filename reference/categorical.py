"""The exact categorical distribution a sampling kernel must draw from, in float64.

A kernel of family ``sample`` receives float32 ``probs`` and must return token ``i`` of a
row with probability ``probs[i] / sum(probs)``, the sum taken exactly. Everything here is
computed from the float32 values the kernel saw, upcast to float64 (never regenerated).
"""

from __future__ import annotations

import numpy as np
import torch


def exact_probs(probs: torch.Tensor) -> np.ndarray:
    """Rows of ``probs`` upcast to float64 and renormalised: the target distribution.

    The exponential race samples ``argmax_i p_i / q_i`` with ``q_i ~ Exp(1)``, which selects
    ``i`` with probability ``p_i / sum_j p_j`` exactly, whatever the scale of the row; the
    renormalisation only removes the float32 rounding of the row sum.
    """
    p = probs.detach().to("cpu", torch.float64).numpy()
    total = p.sum(axis=-1, keepdims=True)
    if np.any(total <= 0):
        raise ValueError("a row of probs has no positive mass")
    return p / total


def rare_mass(p: np.ndarray, rare: np.ndarray) -> float:
    """Total probability of the tokens marked ``rare`` in one float64 row, summed with fsum."""
    return float(np.sum(np.sort(p[rare])))


def collision_probability(p: np.ndarray, q: np.ndarray | None = None) -> float:
    """P(X = Y) for independent X ~ p, Y ~ q (q = p by default): sum_i p_i q_i."""
    q = p if q is None else q
    return float(np.dot(p, q))


def pair_probs(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The joint law of an independent pair (X, Y), X ~ p, Y ~ q: the outer product."""
    return np.outer(p, q)


def race_winner(probs: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """The float64 exponential race: ``argmax_i p_i / q_i`` per row, zero-probability tokens
    excluded. ``noise`` holds the exponential variates q (> 0) the kernel was fed."""
    score = np.where(probs > 0, probs / noise, -1.0)
    return score.argmax(axis=-1)


def exponential_from_bits(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Exp(1) in float64 from 64 random bits: q = -log(1 - v), v = (hi 2^32 + lo + 1/2) 2^-64,
    with log1p below v = 1/2 and the complemented bits above it, so both tails are exact."""
    hi = np.asarray(hi, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    v = (hi + (lo + 0.5) * 2.0**-32) * 2.0**-32
    w = ((2.0**32 - 1 - hi) + (2.0**32 - 1 - lo + 0.5) * 2.0**-32) * 2.0**-32
    return np.where(hi < 2.0**31, -np.log1p(-v), -np.log(w))
