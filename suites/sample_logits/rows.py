"""Rows of family ``sample-logits``: logits and settings, and the law each row must follow.

A ``Rows`` table holds D distinct rows in one dtype, each with its temperature, top-k,
top-p and (optionally) min-p. Draws repeat the table row by row (row r of a call is
distinct row r mod D), so rows of different settings sit side by side in every call and a
kernel that mixes up rows mixes up laws. ``law()`` is the float64 reference
(reference/processed.py): the law of a draw, the surely kept and possibly kept tokens, and
the ambiguous ones float32 cannot resolve.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from sampling_harness.reference.processed import ProcessedLaw, processed_probs


@dataclass(frozen=True, eq=False)
class Rows:
    names: tuple[str, ...]
    logits: np.ndarray          # float64 [D, V], every value exact in ``dtype``
    temperature: np.ndarray     # float32 [D]
    top_k: np.ndarray           # int64 [D]
    top_p: np.ndarray           # float32 [D]
    dtype: torch.dtype = torch.float32
    min_p: np.ndarray | None = None   # float32 [D]; None: no row uses min-p

    @classmethod
    def of(cls, rows: dict[str, tuple], dtype: torch.dtype = torch.float32) -> Rows:
        """From ``{name: (logits row, temperature, top_k, top_p[, min_p])}``, the logits
        rounded to ``dtype`` (then held exactly in float64)."""
        logits = np.stack([np.asarray(r[0], np.float64) for r in rows.values()])
        exact = torch.as_tensor(logits).to(dtype).double().numpy()
        min_p = np.array([r[4] if len(r) > 4 else 0.0 for r in rows.values()], np.float32)
        return cls(tuple(rows), exact,
                   np.array([r[1] for r in rows.values()], np.float32),
                   np.array([r[2] for r in rows.values()], np.int64),
                   np.array([r[3] for r in rows.values()], np.float32), dtype,
                   min_p if (min_p > 0).any() else None)

    @property
    def kinds(self) -> int:
        return self.logits.shape[0]

    @property
    def vocab(self) -> int:
        return self.logits.shape[1]

    @cached_property
    def law(self) -> ProcessedLaw:
        return processed_probs(self.logits, self.temperature, self.top_k, self.top_p,
                               self.min_p)

    def inputs(self, device, rows: int, kinds: np.ndarray | None = None) -> dict:
        """The contract's inputs (without the seed) for a call of ``rows`` rows: row r is
        distinct row ``kinds[r mod len(kinds)]`` (default: all D in turn), tiled on the
        device; ``min_p`` only where some row uses it."""
        which = cycle(np.arange(self.kinds) if kinds is None else kinds, rows, device)

        def tiled(values: np.ndarray, dtype: torch.dtype | None = None) -> torch.Tensor:
            tensor = torch.as_tensor(values)
            return tensor.to(device=device, dtype=dtype or tensor.dtype)[which]

        inputs = {"logits": tiled(self.logits, self.dtype),
                  "temperature": tiled(self.temperature), "top_k": tiled(self.top_k),
                  "top_p": tiled(self.top_p)}
        if self.min_p is not None and (self.min_p > 0).any():
            inputs["min_p"] = tiled(self.min_p)
        return inputs


def cycle(kinds, rows: int, device) -> torch.Tensor:
    """int64 [rows]: the distinct rows ``kinds`` in turn, on the device (row r is
    kinds[r mod len(kinds)]): which distinct row each row of a call repeats."""
    kinds = torch.as_tensor(np.asarray(kinds), device=device)
    return kinds[torch.arange(rows, device=device) % kinds.numel()]


def gaussian(vocab: int, rng: np.random.Generator, scale: float = 2.0) -> np.ndarray:
    return rng.standard_normal(vocab) * scale


def zipf(vocab: int, rng: np.random.Generator, exponent: float = 1.1) -> np.ndarray:
    """log of a permuted Zipf law: a long tail behind a few heads."""
    return rng.permutation(-exponent * np.log(np.arange(1, vocab + 1)))


def grid(vocab: int, rng: np.random.Generator) -> np.ndarray:
    """Values on a 0.5 grid: exact ties everywhere, also at the top."""
    return np.round(rng.standard_normal(vocab) * 2.0) / 2.0


def masked(vocab: int, rng: np.random.Generator, share: float = 0.3) -> np.ndarray:
    """Gaussian with -inf entries (a grammar mask), both ends of the row among them."""
    row = gaussian(vocab, rng)
    row[rng.random(vocab) < share] = -np.inf
    row[[0, vocab - 1]] = -np.inf
    row[rng.integers(1, vocab - 1)] = 3.0
    return row


def tie_at(row: np.ndarray, rank: int) -> int:
    """A top-k landing inside a run of ties: the first k >= ``rank`` whose k-th and
    (k+1)-th largest are equal, else ``rank``."""
    ordered = np.sort(row[np.isfinite(row)])[::-1]
    ties = np.flatnonzero(ordered[rank:][1:] == ordered[rank:][:-1])
    return rank + int(ties[0]) + 1 if ties.size else rank


def curated(vocab: int, seed: int) -> list[Rows]:
    """Rows where sampling from logits breaks, in the three input dtypes; no greedy rows
    (those are exact, see test_greedy)."""
    rng = np.random.default_rng(seed)
    ties = grid(vocab, rng)
    fp32 = Rows.of({
        "gaussian, no filter": (gaussian(vocab, rng), 1.0, 0, 1.0),
        "gaussian, T=0.7, top-k 20": (gaussian(vocab, rng), 0.7, 20, 1.0),
        "zipf, T=1.3, top-p 0.9": (zipf(vocab, rng), 1.3, 0, 0.9),
        "ties, top-k inside a tie, top-p 0.8": (ties, 1.0, tie_at(ties, 10), 0.8),
        "masked, top-k V-1, top-p 0.95": (masked(vocab, rng), 1.0, vocab - 1, 0.95),
        "peaked, T=0.5, top-p 0.5": (gaussian(vocab, rng, 0.5) + 4.0 * (
            np.arange(vocab) == rng.integers(vocab)), 0.5, 0, 0.5),
    })
    bf16 = Rows.of({"bf16 gaussian, T=0.9, top-k 50, top-p 0.95": (
        gaussian(vocab, rng), 0.9, 50, 0.95)}, torch.bfloat16)
    fp16 = Rows.of({"fp16 gaussian x3, T=1.5, top-p 0.7": (
        gaussian(vocab, rng, 3.0), 1.5, 0, 0.7)}, torch.float16)
    return [fp32, bf16, fp16]


def large_vocab(vocab: int, seed: int) -> Rows:
    """LLM-sized rows: the bench's setting, top-p alone, and no filter."""
    rng = np.random.default_rng(seed)
    return Rows.of({
        "zipf-large, T=0.8, top-k 50, top-p 0.9": (zipf(vocab, rng), 0.8, 50, 0.9),
        "gaussian-large, top-p 0.95": (gaussian(vocab, rng), 1.0, 0, 0.95),
        "zipf-large, no filter": (zipf(vocab, rng, 1.0), 1.0, 0, 1.0),
    })
