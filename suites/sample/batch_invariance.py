"""Batch invariance of family ``sample``: exact (harness/checks/batch_invariance.py).

A request is one row of probs. Rows are diffuse (flat Dirichlet weights, some tokens zeroed)
over small vocabularies, so a row whose noise moves draws another token with probability
1 - sum p_i^2, mostly above one half.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.batch_invariance import SPREAD_TOKENS, Adapter, invariance
from sampling_harness.strategies import normalised

VOCABS = (2, 7, 33, 100)


def shape(rng: np.random.Generator) -> dict:
    return {"V": int(rng.choice(VOCABS))}


def fresh(rng: np.random.Generator, shape: dict) -> np.ndarray:
    """One probs row: flat Dirichlet weights, up to a third of the tokens zeroed."""
    weights = rng.dirichlet(np.ones(shape["V"]))
    zeroed = rng.random(shape["V"]) < rng.uniform(0.0, 1.0 / 3)
    zeroed[int(rng.integers(shape["V"]))] = False
    return normalised(np.where(zeroed, 0.0, weights)).astype(np.float32)


def inputs(rows: list[np.ndarray], shape: dict, device: torch.device) -> dict:
    return {"probs": torch.as_tensor(np.stack(rows), device=device)}


def outputs(ids: torch.Tensor, rows: list) -> list[int]:
    return ids.tolist()


def spread() -> tuple[dict, np.ndarray]:
    """A uniform row over SPREAD_TOKENS + 1 tokens."""
    vocab = SPREAD_TOKENS + 1
    return {"V": vocab}, np.full(vocab, 1.0 / vocab, np.float32)


ADAPTER = Adapter(shape=shape, fresh=fresh, inputs=inputs, outputs=outputs,
                  label=lambda row: f", V = {row.size}", spread=spread)


def batch_invariance(ctx):
    return invariance(ctx, ADAPTER)
