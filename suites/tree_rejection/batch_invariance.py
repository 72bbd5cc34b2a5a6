"""Batch invariance of family ``tree-rejection``: exact (harness/checks/batch_invariance.py).

A request is a tree (0 to 8 nodes, random shape), its rows and its greedy flag. Target and
draft rows are independent flat Dirichlet rows over small vocabularies, so about half the
children are rejected and the last token is diffuse: a request whose coins or noise move
changes its output often. A fifth of the requests are greedy; a third of the trials have
listed children (no draft probs), the others drawn ones (drawn once with the request, so
siblings repeat). Batch-mates' trees change N, the padding and D; each request's output is
its row up to its last token.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.checks.batch_invariance import SPREAD_TOKENS, Adapter, invariance
from sampling_harness.suites.tree_rejection.batches import stack

VOCABS = (2, 5, 13, 40)
MAX_NODES = 8


def shape(rng: np.random.Generator) -> dict:
    return {"V": int(rng.choice(VOCABS)), "drawn": bool(rng.random() < 2 / 3)}


def fresh(rng: np.random.Generator, shape: dict) -> dict:
    vocab, drawn = shape["V"], shape["drawn"]
    parents: list[int] = []
    for i in range(int(rng.integers(0, MAX_NODES + 1))):
        parents.append(int(rng.integers(-1, i)))
    target = rng.dirichlet(np.ones(vocab), size=len(parents) + 1).astype(np.float32)
    draft = rng.dirichlet(np.ones(vocab), size=len(parents) + 1).astype(np.float32)
    target, draft = target / target.sum(1, keepdims=True), draft / draft.sum(1, keepdims=True)
    tokens = np.zeros(len(parents), np.int64)
    used: dict[int, set] = {}
    for i, parent in enumerate(parents):
        if drawn:
            q = draft[parent + 1].astype(np.float64)
            tokens[i] = rng.choice(vocab, p=q / q.sum())
        else:
            free = [t for t in range(vocab) if t not in used.setdefault(parent, set())]
            tokens[i] = rng.choice(free) if len(free) > 1 else -1   # one token stays out
            used[parent].add(int(tokens[i]))
    keep = _prefix(parents, tokens)
    return {"parents": np.array(parents[:keep], np.int64), "tokens": tokens[:keep],
            "target": target[:keep + 1], "draft": draft[:keep + 1],
            "greedy": bool(rng.random() < 0.2)}


def _prefix(parents: list[int], tokens: np.ndarray) -> int:
    """The nodes kept: those before the first that found no free token (listed siblings
    are distinct, and leave a token of the row outside)."""
    for i in range(len(parents)):
        if tokens[i] < 0:
            return i
    return len(parents)


def inputs(requests: list[dict], shape: dict, device) -> dict:
    return stack(requests, shape["V"], device, shape["drawn"])


def outputs(out, requests: list[dict]) -> list[tuple[int, ...]]:
    return [tuple(t for t in row if t >= 0) for row in out.tolist()]


def label(request: dict) -> str:
    return (f", {request['parents'].size} nodes{', greedy' if request['greedy'] else ''}, "
            f"V = {request['target'].shape[1]}")


def spread() -> tuple[dict, dict]:
    """No nodes, a uniform root row over SPREAD_TOKENS + 1 tokens: the one returned token
    is uniform over all of them."""
    vocab = SPREAD_TOKENS + 1
    row = np.full((1, vocab), 1.0 / vocab, np.float32)
    return {"V": vocab, "drawn": True}, {"parents": np.zeros(0, np.int64),
                                         "tokens": np.zeros(0, np.int64), "target": row,
                                         "draft": row.copy(), "greedy": False}


ADAPTER = Adapter(shape=shape, fresh=fresh, inputs=inputs, outputs=outputs, label=label,
                  spread=spread)


def batch_invariance(ctx):
    return invariance(ctx, ADAPTER)
