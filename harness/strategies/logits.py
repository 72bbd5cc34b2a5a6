"""Hypothesis strategies for logprob batches: logits, sampling settings, requested ids.

Composed from small named pieces; rows are built by numpy from drawn shapes and seeds.
A batch is a dict of the ``logprobs`` contract's inputs but the mode, on the CPU.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st

from sampling_harness.strategies.probs import row_seeds, vocab_sizes

INPUT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def input_dtypes() -> st.SearchStrategy[torch.dtype]:
    return st.sampled_from(INPUT_DTYPES)


def logit_scales() -> st.SearchStrategy[float]:
    """Spread of a row: from nearly flat to huge ranges (float16 keeps |x| <= 6e4)."""
    return st.floats(-2.0, 4.0).map(lambda e: 10.0 ** e)


def tie_grids() -> st.SearchStrategy[float]:
    """0 (no grid) or the step logits are rounded to, making exact ties."""
    return st.one_of(st.just(0.0), st.sampled_from((0.25, 0.5, 1.0)))


def masked_fractions() -> st.SearchStrategy[float]:
    """Share of entries at -inf."""
    return st.one_of(st.just(0.0), st.floats(0.0, 0.9))


def temperatures() -> st.SearchStrategy[float]:
    """Sampled rows first (Hypothesis's first example, the only one of a one-batch budget,
    is each strategy's first branch at its simplest: a sampled row, not a greedy one), then
    any temperature, then 0 (greedy)."""
    return st.one_of(st.just(1.0), st.floats(0.05, 3.0), st.just(0.0))


def top_ks(vocab: int) -> st.SearchStrategy[int]:
    """Disabled (<= 0, >= V), tiny, and at and around V."""
    return st.one_of(st.integers(-2, 3), st.integers(max(0, vocab - 2), vocab + 2),
                     st.integers(0, vocab + 2))


def top_ps() -> st.SearchStrategy[float]:
    """Disabled (1), just under 1, and anywhere in (0, 1)."""
    return st.one_of(st.just(1.0), st.floats(1 - 1e-6, 1.0), st.floats(1e-4, 0.9999))


def min_ps() -> st.SearchStrategy[float]:
    """Disabled (0), tiny, typical (0.05 - 0.3), and 1 (the maxima alone)."""
    return st.one_of(st.just(0.0), st.just(1.0), st.floats(1e-4, 1.0))


@st.composite
def logit_rows(draw, vocab: int, dtype: torch.dtype) -> np.ndarray:
    """One float64 row holding values exactly representable in ``dtype``."""
    rng = draw(row_seeds())
    scale, grid, masked = draw(logit_scales()), draw(tie_grids()), draw(masked_fractions())
    row = rng.standard_normal(vocab) * min(scale, 6e4 / 5)
    if grid:
        row = np.round(row / grid) * grid
    row[rng.random(vocab) < masked] = -np.inf
    if not np.isfinite(row).any():
        row[rng.integers(vocab)] = 0.0
    return torch.as_tensor(row).to(dtype).double().numpy()


@st.composite
def requested_ids(draw, logits: np.ndarray, slots: int) -> np.ndarray:
    """int64 [B, slots]: the argmax, tied and masked tokens, random ones, padding anywhere."""
    rng = draw(row_seeds())
    rows, vocab = logits.shape
    ids = rng.integers(vocab, size=(rows, slots))
    ids[:, 0] = np.argmax(logits, axis=1)
    ids[rng.random((rows, slots)) < draw(st.floats(0.0, 0.5))] = -1
    return ids


@st.composite
def logprob_batches(draw, max_vocab: int, max_rows: int = 4, max_slots: int = 32) -> dict:
    """A batch of the ``logprobs`` contract's inputs (all but the mode), on the CPU."""
    dtype, vocab = draw(input_dtypes()), draw(vocab_sizes(max_vocab))
    rows = draw(st.integers(1, max_rows))
    logits = np.stack([draw(logit_rows(vocab, dtype)) for _ in range(rows)])
    return {"logits": torch.as_tensor(logits).to(dtype),
            "token_ids": torch.as_tensor(draw(requested_ids(logits, draw(
                st.integers(1, max_slots))))),
            "temperature": torch.tensor([draw(temperatures()) for _ in range(rows)],
                                        dtype=torch.float32),
            "top_k": torch.tensor([draw(top_ks(vocab)) for _ in range(rows)]),
            "top_p": torch.tensor([draw(top_ps()) for _ in range(rows)], dtype=torch.float32)}


@st.composite
def sampling_tables(draw, max_vocab: int, rows: int) -> dict:
    """``rows`` rows of family ``sample-logits`` in one dtype: float64 logits exact in that
    dtype, and per-row temperature (0 included), top-k, top-p and min-p at and around their
    boundaries."""
    dtype, vocab = draw(input_dtypes()), draw(vocab_sizes(max_vocab))
    return {"dtype": dtype,
            "logits": np.stack([draw(logit_rows(vocab, dtype)) for _ in range(rows)]),
            "temperature": np.array([draw(temperatures()) for _ in range(rows)], np.float32),
            "top_k": np.array([draw(top_ks(vocab)) for _ in range(rows)], np.int64),
            "top_p": np.array([draw(top_ps()) for _ in range(rows)], np.float32),
            "min_p": np.array([draw(min_ps()) for _ in range(rows)], np.float32)}
