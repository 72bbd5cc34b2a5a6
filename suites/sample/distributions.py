"""Curated distributions for the ``sample`` family: the shapes where sampling kernels break.

Heads are put at random positions (not token 0), so an index bug cannot hide behind a
distribution that is symmetric in the token order.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.strategies import normalised


def curated(vocab: int, seed: int) -> dict[str, np.ndarray]:
    """Named float32 rows over ``vocab`` tokens (choose ``vocab`` off every block size)."""
    rng = np.random.default_rng(seed)
    flat = np.ones(vocab)
    peaked = np.full(vocab, 0.1 / (vocab - 1))
    peaked[rng.integers(vocab)] = 0.9
    zipf = rng.permutation(1.0 / np.arange(1, vocab + 1) ** 1.1)
    with_zeros = np.where(rng.random(vocab) < 0.5, 0.0, rng.dirichlet(np.ones(vocab)))
    with_zeros[[0, vocab - 1]] = 0.0  # zeros exactly at both ends of the row
    ends = np.full(vocab, 0.4 / (vocab - 2))
    ends[[0, vocab - 1]] = 0.3
    steep = np.exp(4.0 * rng.standard_normal(vocab))
    rows = {"flat": flat, "peaked": peaked, "zipf": zipf, "with-zeros": with_zeros,
            "ends": ends, "steep": steep}
    return {name: normalised(w) for name, w in rows.items()}


def large_vocab(vocab: int, seed: int) -> dict[str, np.ndarray]:
    """Rows of an LLM-sized vocabulary: a Zipf head over a long tail, and a flat row."""
    rng = np.random.default_rng(seed)
    return {"zipf-large": normalised(rng.permutation(1.0 / np.arange(1, vocab + 1))),
            "flat-large": normalised(np.ones(vocab))}


def sparse_rows(vocab: int, rows: int, support: int, seed: int) -> np.ndarray:
    """``rows`` rows with ``support`` positive tokens each, the rest exactly 0; every fourth
    row keeps its mass on the first and last tokens (the edges of the last block)."""
    rng = np.random.default_rng(seed)
    table = np.zeros((rows, vocab), dtype=np.float32)
    for r in range(rows):
        tokens = rng.choice(vocab, size=support, replace=False)
        if r % 4 == 0:
            tokens[:2] = (0, vocab - 1)
        table[r, tokens] = normalised(rng.random(support) + 0.1)
    return table
