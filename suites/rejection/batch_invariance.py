"""Batch invariance of family ``rejection``: exact (harness/checks/batch_invariance.py).

A request is its drafts (0 to 4), their draft and target rows, its bonus token and greedy
flag. Draft and target laws are independent flat Dirichlet rows over small vocabularies, so
about half the drafts are rejected and the recovered token is diffuse: a request whose
acceptance uniforms or residual noise move changes its output often. A fifth of the
requests are greedy; a third of the trials pass no draft probs (q one-hot at the draft).
Each request's output is its row up to its emitted token (the width of the output row
follows the batch's longest request).
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.batch_invariance import SPREAD_TOKENS, Adapter, invariance

VOCABS = (2, 5, 13, 40)
MAX_DRAFTS = 4


def shape(rng: np.random.Generator) -> dict:
    return {"V": int(rng.choice(VOCABS)), "draft_probs": bool(rng.random() < 2 / 3)}


def fresh(rng: np.random.Generator, shape: dict) -> dict:
    vocab, n = shape["V"], int(rng.integers(0, MAX_DRAFTS + 1))
    q = rng.dirichlet(np.ones(vocab), size=n).astype(np.float32)
    p = rng.dirichlet(np.ones(vocab), size=n).astype(np.float32)
    q, p = q / q.sum(1, keepdims=True), p / p.sum(1, keepdims=True)
    source = q if shape["draft_probs"] else np.full((n, vocab), 1.0 / vocab)
    drafts = np.array([rng.choice(vocab, p=row / row.sum()) for row in source], np.int64)
    return {"drafts": drafts, "q": q, "p": p, "bonus": int(rng.integers(vocab)),
            "greedy": bool(rng.random() < 0.2)}


def dense(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """``array`` on ``device`` with row-major strides (numpy gives an empty array zero
    strides, which a kernel's pointer arithmetic and the harness's guards do not expect)."""
    host = torch.from_numpy(np.ascontiguousarray(array))
    return torch.empty(host.shape, dtype=host.dtype, device=device).copy_(host)


def inputs(requests: list[dict], shape: dict, device: torch.device) -> dict:
    vocab = shape["V"]

    def rows(key: str) -> torch.Tensor:
        return dense(np.concatenate([r[key].reshape(-1, vocab) for r in requests]), device)

    return {"draft_token_ids": dense(np.concatenate([r["drafts"] for r in requests]), device),
            "num_draft_tokens": [int(r["drafts"].size) for r in requests],
            "draft_probs": rows("q") if shape["draft_probs"] else None,
            "target_probs": rows("p"),
            "bonus_token_ids": torch.tensor([r["bonus"] for r in requests], dtype=torch.int64,
                                            device=device),
            "greedy": torch.tensor([r["greedy"] for r in requests], dtype=torch.bool,
                                   device=device)}


def outputs(out: torch.Tensor, requests: list[dict]) -> list[tuple[int, ...]]:
    return [tuple(row[:r["drafts"].size + 1]) for row, r in zip(out.tolist(), requests,
                                                                 strict=True)]


def label(request: dict) -> str:
    return (f", {request['drafts'].size} drafts{', greedy' if request['greedy'] else ''}, "
            f"V = {request['p'].shape[1]}")


def spread() -> tuple[dict, dict]:
    """One draft, token 0, of target probability 0 (always rejected; q one-hot at it): the
    recovered token is uniform over the other SPREAD_TOKENS tokens."""
    vocab = SPREAD_TOKENS + 1
    p = np.full((1, vocab), 1.0 / SPREAD_TOKENS, np.float32)
    p[0, 0] = 0.0
    q = np.zeros((1, vocab), np.float32)
    q[0, 0] = 1.0
    return {"V": vocab, "draft_probs": True}, {"drafts": np.zeros(1, np.int64), "q": q, "p": p,
                                               "bonus": 0, "greedy": False}


ADAPTER = Adapter(shape=shape, fresh=fresh, inputs=inputs, outputs=outputs, label=label,
                  spread=spread)


def batch_invariance(ctx):
    return invariance(ctx, ADAPTER)
