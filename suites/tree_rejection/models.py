"""Target and draft models for family ``tree-rejection``: laws as functions of the path.

A model holds one (p, q) pair of float32 rows per path of length <= its depth
(reference/tree_rejection.py ``TreeModel``), so two nodes with the same path get the same
rows, as they would from a real model. Each pair is of a named kind (the chain family's
position laws, suites/rejection/requests.py: typical, weak draft, near-equal, q with mass
where p has none, peaked target, equal), repaired so that a residual exists wherever a
rejection is possible (harness/strategies/rejection.py). Listed children are chosen from
the model too: the top k of the draft row (as a draft model's top-k proposes), distinct
random tokens, or adversarial ones (a token of target probability 0, the argmax, the least
likely), always leaving a token of positive target probability outside the children
unless their target probabilities sum to 1 or more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sampling_harness.reference.tree_rejection import TreeModel, children, path_offsets
from sampling_harness.strategies.rejection import repaired
from sampling_harness.suites.rejection.requests import position_laws

KINDS = ("typical", "weak-draft", "near-equal", "q-mass-where-p-has-none", "peaked-target",
         "equal")
LISTED_CHOICES = ("draft top-k", "random distinct", "adversarial")


def row_pair(kind: str, vocab: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(p, q) of one path, float32, of ``kind``; V = 1 is the one-hot pair."""
    if vocab == 1:
        return np.ones(1, np.float32), np.ones(1, np.float32)
    if kind == "peaked-target" and vocab < 3:
        kind = "typical"
    p, q = position_laws(kind, vocab, rng)
    return repaired(p.astype(np.float32), q.astype(np.float32))


def build_model(vocab: int, depth: int, seed: int, kinds=("typical",)) -> TreeModel:
    """Rows for every path of length <= ``depth``, each pair of a kind drawn from
    ``kinds`` (the seed decides everything)."""
    rng = np.random.default_rng(seed)
    rows = int(path_offsets(vocab, depth)[-1])
    pairs = [row_pair(kinds[int(rng.integers(len(kinds)))], vocab, rng) for _ in range(rows)]
    return TreeModel(target=np.stack([p for p, _ in pairs]),
                     draft=np.stack([q for _, q in pairs]), depth=depth)


@dataclass(frozen=True)
class PathModel:
    """Rows made on demand from a seed and the path, for vocabularies too large to tabulate
    every path: the same path always gets the same (p, q)."""

    vocab: int
    seed: int
    kinds: tuple[str, ...] = ("typical",)

    def rows(self, path) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng([self.seed, len(path), *(int(t) for t in path)])
        return row_pair(self.kinds[int(rng.integers(len(self.kinds)))], self.vocab, rng)


def uniform_model(p: np.ndarray, q: np.ndarray, depth: int) -> TreeModel:
    """The same (p, q) after every path (a model whose law does not move)."""
    rows = int(path_offsets(p.size, depth)[-1])
    return TreeModel(target=np.tile(p.astype(np.float32), (rows, 1)),
                     draft=np.tile(q.astype(np.float32), (rows, 1)), depth=depth)


def listed_tokens(model, parents, choice: str, seed: int) -> np.ndarray:
    """int64 [N]: distinct tokens for every node's children, chosen by ``choice`` from the
    rows of the parent's path (children are chosen after their parent's token)."""
    rng = np.random.default_rng(seed)
    kids = children(parents)
    tokens = np.full(len(parents), -1, dtype=np.int64)
    paths: dict[int, tuple[int, ...]] = {-1: ()}
    for node in sorted(kids):                         # parents before children
        if not kids[node]:
            continue
        p, q = model.rows(paths[node])
        chosen = choose(p, q, len(kids[node]), choice, rng)
        for child, token in zip(kids[node], chosen, strict=True):
            tokens[child] = token
            paths[child] = paths[node] + (int(token),)
    return tokens


def choose(p: np.ndarray, q: np.ndarray, k: int, choice: str,
           rng: np.random.Generator) -> list[int]:
    """k distinct tokens by ``choice``; some token of positive p stays outside unless the
    chosen ones' p sums to >= 1 (else nothing would be left to draw at a rejection)."""
    vocab = p.size
    if k > vocab:
        raise ValueError(f"{k} distinct children need V >= {k}, got {vocab}")
    if choice == "draft top-k":
        order = np.argsort(-q, kind="stable")
    elif choice == "adversarial":
        zero, positive = np.flatnonzero(p == 0), np.flatnonzero(p > 0)
        ranked = positive[np.argsort(-p[positive], kind="stable")]
        first = [*zero[:1], *ranked[:1], *ranked[-1:]]
        order = np.array(list(dict.fromkeys(first + list(rng.permutation(vocab)))))
    else:
        order = rng.permutation(vocab)
    chosen = [int(t) for t in order[:k]]
    outside = np.setdiff1d(np.flatnonzero(p > 0), chosen)
    if outside.size == 0 and p[chosen].astype(np.float64).sum() < 1.0:
        swap = int(np.argmin(np.where(p[chosen] > 0, p[chosen], np.inf)))
        spare = np.setdiff1d(np.arange(vocab), chosen)
        if spare.size == 0:
            raise ValueError("every token is a child and their p sums below 1")
        chosen[swap] = int(spare[0])
    return chosen
