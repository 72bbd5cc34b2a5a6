"""Curated batches for family ``logprobs``: the rows and settings where logprob code breaks.

A batch is a dict of the contract's inputs (without the mode) on the CPU: logits in one
dtype, the requested token ids (the argmax, tied tokens, masked tokens, a random token,
padding at random slots), and per-row temperature, top-k and top-p chosen at and around
their boundaries: temperature 0, k at a tie, k = V - 1, V, V + 3, top_p at 1, just under 1
and tiny.
"""

from __future__ import annotations

import numpy as np
import torch

DTYPES = (torch.float32, torch.bfloat16, torch.float16)
SLOTS = 8


def row_logits(kind: str, vocab: int, rng: np.random.Generator) -> np.ndarray:
    """One row of float64 logits by name (cast to the batch dtype later)."""
    if kind == "gaussian":
        return rng.standard_normal(vocab) * 2.0
    if kind == "ties":  # values on a coarse grid: many exact ties, also at the top
        return np.round(rng.standard_normal(vocab) * 2.0) / 2.0
    if kind == "masked":  # -inf entries, as a grammar or an earlier mask leaves them
        row = rng.standard_normal(vocab) * 2.0
        row[rng.random(vocab) < 0.3] = -np.inf
        row[rng.integers(vocab)] = 1.0
        return row
    if kind == "huge-range":  # float16 keeps |x| <= 65504
        return rng.uniform(-6e4, 6e4, vocab) * (rng.random(vocab) < 0.5)
    if kind == "peaked":
        row = rng.standard_normal(vocab)
        row[rng.integers(vocab)] = 40.0
        return row
    if kind == "flat":
        return np.zeros(vocab)
    raise ValueError(f"unknown row kind {kind!r}")


KINDS = ("gaussian", "ties", "masked", "huge-range", "peaked", "flat")


def settings(vocab: int, logits: np.ndarray, rng: np.random.Generator):
    """Per-row (temperature, top_k, top_p): each row takes its boundary cases in turn."""
    temperatures = np.array([1.0, 0.0, 0.7, 1.5])
    ks = [0, 1, 5, vocab - 1, vocab, vocab + 3]
    ps = [1.0, 0.9, 0.5, 1.0 - 2.0**-20, 1e-3]
    rows = logits.shape[0]
    temperature = temperatures[np.arange(rows) % temperatures.size]
    top_k = np.array([ks[r % len(ks)] for r in range(rows)], dtype=np.int64)
    for r in range(0, rows, 5):  # k landing inside a tie at the boundary
        finite = np.sort(logits[r][np.isfinite(logits[r])])[::-1]
        ties = np.flatnonzero(finite[1:] == finite[:-1])
        if ties.size:
            top_k[r] = int(ties[0]) + 1
    top_p = np.array([ps[(r // 2) % len(ps)] for r in range(rows)])
    return temperature.astype(np.float32), top_k, top_p.astype(np.float32)


def requested_ids(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """int64 [B, SLOTS]: argmax, a tied token, a masked token, random tokens, padding."""
    rows, vocab = logits.shape
    ids = rng.integers(vocab, size=(rows, SLOTS))
    ids[:, 0] = np.argmax(logits, axis=1)
    for r in range(rows):
        tied = np.flatnonzero(logits[r] == logits[r, ids[r, 1]])
        ids[r, 2] = tied[-1]
        masked = np.flatnonzero(~np.isfinite(logits[r]))
        if masked.size:
            ids[r, 3] = masked[0]
    pad = rng.random((rows, SLOTS)) < 0.2
    pad[:, 0] = False
    ids[pad] = -1
    ids[rows - 1, :] = -1 if rows > 1 else ids[rows - 1, :]  # a row of padding only
    return ids


def order_row(vocab: int) -> tuple[np.ndarray, tuple[float, int, float]]:
    """Three heads of probability 0.4, 0.35, 0.25 (the rest negligible) with top-k 2 and
    top-p 0.5: top-k first keeps the first head alone (0.4 / 0.75 >= 0.5), top-p first keeps
    two. The order of the two steps shows."""
    row = np.full(vocab, -60.0)
    row[[vocab // 3, 2 * vocab // 3, vocab - 1]] = np.log([0.4, 0.35, 0.25])
    return row, (1.0, 2, 0.5)


def curated(vocab: int, dtype: torch.dtype, seed: int) -> dict:
    """A batch: every row kind twice, with its settings and requested ids, and the row
    where the order of top-k and top-p shows."""
    rng = np.random.default_rng(seed)
    logits = np.stack([row_logits(kind, vocab, rng) for kind in KINDS for _ in range(2)])
    ordered, (t, k, p) = order_row(vocab)
    logits = np.vstack([ordered, logits]) if vocab >= 3 else logits
    typed = torch.as_tensor(logits, dtype=torch.float64).to(dtype)
    exact = typed.double().numpy()  # the values the kernel sees
    temperature, top_k, top_p = settings(vocab, exact, rng)
    if vocab >= 3:
        temperature[0], top_k[0], top_p[0] = t, k, p
    ids = requested_ids(exact, rng)
    for r in range(exact.shape[0] - 1):  # request the last token tied at the top-k boundary
        finite = np.sort(exact[r][np.isfinite(exact[r])])[::-1]
        if 0 < top_k[r] <= finite.size:
            ids[r, 4] = np.flatnonzero(exact[r] == finite[top_k[r] - 1]).max()
    return {"logits": typed, "token_ids": torch.as_tensor(ids),
            "temperature": torch.as_tensor(temperature), "top_k": torch.as_tensor(top_k),
            "top_p": torch.as_tensor(top_p)}
