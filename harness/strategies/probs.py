"""Hypothesis strategies for sampling inputs, composed from small named pieces.

Large arrays are not drawn element by element (that would be slow and shrink badly):
a strategy draws the *shape* of a distribution (kind, scale, zero fraction, vocabulary size)
and a seed, and numpy builds the row from them. Rows are float32, normalised in float64.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

# Sizes that sit just off the block sizes kernels like: 2^k - 1, 2^k + 1, and primes.
AWKWARD_VOCABS = (2, 3, 7, 31, 33, 127, 129, 131, 255, 257, 1000, 1023, 1025, 1031, 2047, 2049,
                  4095, 4097, 4099, 8191, 8193, 32000, 128256, 151936, 151937)


def vocab_sizes(max_vocab: int) -> st.SearchStrategy[int]:
    """Vocabulary sizes up to ``max_vocab``, half of them just off a power of two."""
    awkward = [v for v in AWKWARD_VOCABS if v <= max_vocab]
    return st.one_of(st.sampled_from(awkward), st.integers(2, max_vocab))


def row_seeds() -> st.SearchStrategy[np.random.Generator]:
    return st.integers(0, 2**32 - 1).map(np.random.default_rng)


def logit_shapes() -> st.SearchStrategy[tuple[str, float]]:
    """How the logits of a row look: a kind and a sharpness."""
    return st.tuples(st.sampled_from(("gaussian", "zipf", "dirichlet", "two-level")),
                     st.floats(0.1, 6.0))


def zero_fractions() -> st.SearchStrategy[float]:
    """Share of the vocabulary masked to probability 0 (top-k / top-p / grammar masks)."""
    return st.one_of(st.just(0.0), st.floats(0.0, 0.99))


def _weights(kind: str, sharpness: float, vocab: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "gaussian":
        logits = rng.standard_normal(vocab) * sharpness
        return np.exp(logits - logits.max())
    if kind == "zipf":
        return rng.permutation(1.0 / np.arange(1, vocab + 1) ** (0.5 + sharpness / 2))
    if kind == "dirichlet":
        return rng.dirichlet(np.full(vocab, 1.0 / sharpness)) + 1e-300
    heavy = rng.random(vocab) < 0.05
    return np.where(heavy, 1.0, 10.0 ** -sharpness)


def normalised(weights: np.ndarray) -> np.ndarray:
    """float32 row summing to 1 up to float32 rounding, normalised in float64."""
    return (weights / weights.sum()).astype(np.float32)


@st.composite
def probs_rows(draw, vocab: int) -> np.ndarray:
    """One float32 probability row over ``vocab`` tokens, at least one of them positive."""
    kind, sharpness = draw(logit_shapes())
    rng = draw(row_seeds())
    weights = _weights(kind, sharpness, vocab, rng)
    zeros = rng.random(vocab) < draw(zero_fractions())
    zeros[rng.integers(vocab)] = False
    row = normalised(np.where(zeros, 0.0, weights))
    if not (row > 0).any():  # every weight underflowed float32: keep the largest
        row[np.argmax(weights * ~zeros)] = 1.0
    return row


@st.composite
def probs_tables(draw, max_vocab: int, rows: int) -> np.ndarray:
    """``rows`` different distributions over one vocabulary: a [rows, V] float32 table."""
    vocab = draw(vocab_sizes(max_vocab))
    return np.stack([draw(probs_rows(vocab)) for _ in range(rows)])
