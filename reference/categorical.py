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


def race_scores(weights: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Scores of the float64 exponential race: ``w / q``, and -1 where ``w`` is 0 (a
    zero-weight entry never wins). The winner is the argmax; ``noise`` holds q > 0."""
    return np.where(weights > 0, weights / noise, -1.0)


def exponential_from_bits(main: np.ndarray, refine: np.ndarray,
                          refine_below: int = 4096) -> np.ndarray:
    """Exp(1) in float64 from a 32-bit main word and a 32-bit refinement word.

    With x_int = min(w, 2^32 - 1 - w) the main word's distance from the nearer end of (0, 1)
    (in units of 2^-32), x = (x_int + t) 2^-32 where t = 1/2, or t = (r + 1/2) 2^-32 when
    x_int < ``refine_below``; then q = -log1p(-x) in the lower half and -log(x) in the upper
    one. Both tails are exact in float64; this is the noise ``triton-exact`` intends."""
    main = np.asarray(main, dtype=np.int64)
    upper = main >= 2**31
    x_int = np.where(upper, 2**32 - 1 - main, main).astype(np.float64)
    tail = np.where(x_int < refine_below, (np.asarray(refine, np.float64) + 0.5) * 2.0**-32, 0.5)
    x = (x_int + tail) * 2.0**-32
    return np.where(upper, -np.log(x), -np.log1p(-x))


def chunked_race_winner(probs: np.ndarray, chunk_noise: np.ndarray, token_noise: np.ndarray,
                        width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exponential race run in two levels, in float64, on given noise.

    Chunks of ``width`` columns race with score P_G / q_G (P_G the chunk's mass, q_G from
    ``chunk_noise`` [B, chunks]); the tokens of the winning chunk race with p_i / q_i (q_i
    from ``token_noise`` [B, V]). Since min_{i in G} q_i / p_i ~ Exp(rate P_G), independent
    of which token attains it, this draws token i with probability p_i / sum p, as the
    one-level race does. Returns (winner, chunk gap, token gap): the relative gaps between
    the two best scores at each level (where rounding could reorder them).
    """
    batch, vocab = probs.shape
    chunks = chunk_noise.shape[1]
    padded = np.zeros((batch, chunks * width))
    padded[:, :vocab] = probs
    mass = padded.reshape(batch, chunks, width).sum(axis=2)
    chunk_score = race_scores(mass, chunk_noise)
    won = chunk_score.argmax(axis=1)
    in_won = np.arange(vocab)[None, :] // width == won[:, None]
    token_score = np.where(in_won, race_scores(probs, token_noise), -2.0)
    winner = token_score.argmax(axis=1)
    return winner, _gap(chunk_score), _gap(token_score)


def _gap(score: np.ndarray) -> np.ndarray:
    """Relative gap between the best and second-best score of each row (inf for one)."""
    if score.shape[1] < 2:
        return np.full(score.shape[0], np.inf)
    top2 = -np.sort(-score, axis=1)[:, :2]
    return (top2[:, 0] - top2[:, 1]) / np.abs(top2[:, 0])
