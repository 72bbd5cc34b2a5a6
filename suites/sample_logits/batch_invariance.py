"""Batch invariance of family ``sample-logits``: exact (harness/checks/batch_invariance.py).

A request is one row of logits with its temperature, top-k and top-p (greedy rows, a tenth
of them, are compared too: their argmax must not move either). Logits N(0, s^2) with s in
[0.5, 2] over small vocabularies, some entries -inf, keep the processed laws diffuse.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.batch_invariance import SPREAD_TOKENS, Adapter, invariance
from sampling_harness.families import FAMILIES

VOCABS = (2, 7, 33, 100)
NEUTRAL = {"min_p": (np.float32, 0.0)}    # settings this check leaves off, if the contract has them


def shape(rng: np.random.Generator) -> dict:
    return {"V": int(rng.choice(VOCABS))}


def fresh(rng: np.random.Generator, shape: dict) -> tuple:
    """(logits row, temperature, top_k, top_p): a tenth greedy, half with a top-k, half with
    a top-p; a third of the rows with up to a fifth of their entries -inf."""
    vocab = shape["V"]
    logits = (rng.standard_normal(vocab) * rng.uniform(0.5, 2.0)).astype(np.float32)
    if rng.random() < 1 / 3:
        masked = rng.random(vocab) < 0.2
        masked[int(rng.integers(vocab))] = False
        logits[masked] = -np.inf
    temperature = 0.0 if rng.random() < 0.1 else float(rng.uniform(0.5, 1.5))
    top_k = int(rng.integers(1, vocab + 1)) if rng.random() < 0.5 else 0
    top_p = float(rng.uniform(0.5, 1.0)) if rng.random() < 0.5 else 1.0
    return logits, temperature, top_k, top_p


def inputs(rows: list[tuple], shape: dict, device: torch.device) -> dict:
    batch = {
        "logits": torch.as_tensor(np.stack([r[0] for r in rows]), device=device),
        "temperature": torch.tensor([r[1] for r in rows], dtype=torch.float32, device=device),
        "top_k": torch.tensor([r[2] for r in rows], dtype=torch.int64, device=device),
        "top_p": torch.tensor([r[3] for r in rows], dtype=torch.float32, device=device)}
    for name in FAMILIES["sample-logits"].parameters:
        if name not in batch and name in NEUTRAL:
            dtype, value = NEUTRAL[name]
            batch[name] = torch.full((len(rows),), value, dtype=getattr(torch, dtype.__name__),
                                     device=device)
    return batch


def outputs(ids: torch.Tensor, rows: list) -> list[int]:
    return ids.tolist()


def label(row: tuple) -> str:
    return f", V = {row[0].size}, T = {row[1]:.3g}, top-k {row[2]}, top-p {row[3]:.3g}"


def spread() -> tuple[dict, tuple]:
    """Equal logits over SPREAD_TOKENS + 1 tokens, temperature 1, no filter."""
    vocab = SPREAD_TOKENS + 1
    return {"V": vocab}, (np.zeros(vocab, np.float32), 1.0, 0, 1.0)


ADAPTER = Adapter(shape=shape, fresh=fresh, inputs=inputs, outputs=outputs, label=label,
                  spread=spread)


def batch_invariance(ctx):
    return invariance(ctx, ADAPTER)
