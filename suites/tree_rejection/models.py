"""Target and draft models for family ``tree-rejection``: laws as functions of the path.

A model holds one (p, q) pair of float32 rows per path of length <= its depth
(reference/tree_rejection.py ``TreeModel``), so two nodes with the same path get the same
rows, as they would from a real model. Each pair is of a named kind (the chain family's
position laws, harness/checks/position_laws.py: typical, weak draft, near-equal, q with mass
where p has none, peaked target, equal), repaired so that a residual exists wherever a
rejection is possible (harness/strategies/rejection.py). Listed children are chosen from
the model too: the top k of the draft row (as a draft model's top-k proposes), distinct
random tokens, or adversarial ones (a token of target probability 0, the argmax, the least
likely) or dealt over the four quarters of a chunk (``every quarter``), always leaving a
token of positive target probability outside the children unless their target
probabilities sum to 1 or more.

Chunks and quarters are those of the project's Triton kernels (kernels/sample/
triton_race.py ``quarter_width``): a row is read in chunks of 4 Q columns, Q = the power of
two at or above V / 4, at least 16, at most 512; a mask or an offset wrong in one quarter
shows only where a child's token falls in it.

``emptied`` makes a model whose residuals come out empty where the last token is drawn
after rejections (rows that are laws only up to their mass: the contract's fallback, the
last token drawn from p / sum p, reference/tree_rejection.py ``fallback``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sampling_harness.checks.position_laws import position_laws
from sampling_harness.reference.tree_rejection import (
    TreeModel,
    children,
    node_paths,
    path_offsets,
)
from sampling_harness.strategies.rejection import repaired

KINDS = ("typical", "weak-draft", "near-equal", "q-mass-where-p-has-none", "peaked-target",
         "equal")
LISTED_CHOICES = ("draft top-k", "random distinct", "adversarial")
MIN_QUARTER, MAX_QUARTER = 16, 512   # Q's floor and ceiling (triton_race.quarter_width)
EMPTIED_MASS = 0.75                  # listed: P_k at a node whose children hold p's support
EMPTIED_EXTRA = 1.0 / 3.0            # drawn: q = p + e, e of this mass (Q = 4/3)


def quarter_width(vocab: int) -> int:
    """Q, the width of a chunk's quarter for V columns (module docstring)."""
    wanted = max(1, -(-vocab // 4))
    return min(MAX_QUARTER, max(MIN_QUARTER, 1 << (wanted - 1).bit_length()))


def every_quarter(vocab: int, rng: np.random.Generator) -> np.ndarray:
    """All V tokens, dealt round-robin from the quarters of the row's chunks (columns
    v // Q, each quarter's in random order): the first k spread over every quarter of
    every chunk, as far as k reaches."""
    quarter = np.arange(vocab) // quarter_width(vocab)
    piles = [list(rng.permutation(np.flatnonzero(quarter == k)))
             for k in range(int(quarter[-1]) + 1)]
    dealt = []
    while any(piles):
        dealt += [pile.pop() for pile in piles if pile]
    return np.array(dealt, dtype=np.int64)


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
    elif choice == "every quarter":
        order = every_quarter(vocab, rng)
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


def held_only(p: np.ndarray, held) -> np.ndarray:
    """float32: p on the tokens ``held`` alone (each raised by 1e-3, so that none is 0),
    scaled to mass EMPTIED_MASS."""
    mask = np.zeros(p.shape[-1], bool)
    mask[np.asarray(held, dtype=np.int64)] = True
    kept = np.where(mask, p.astype(np.float64) + 1e-3, 0.0)
    return (kept * EMPTIED_MASS / kept.sum()).astype(np.float32)


def overdrawn(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """float32 q = p + e, e >= 0 random of mass EMPTIED_EXTRA (rows of ``p`` alike): p <= q
    exactly, since float32 rounding of p + e only raises it."""
    extra = rng.random(p.shape)
    extra *= EMPTIED_EXTRA / extra.sum(-1, keepdims=True)
    return (p.astype(np.float64) + extra).astype(np.float32)


def emptied(model: TreeModel, parents, tokens=None, seed: int = 0) -> TreeModel:
    """The model with its residuals emptied. Listed (``tokens``): the target row of every
    node with children is ``held_only`` its children's tokens, so all of them are rejected
    with probability 1 - EMPTIED_MASS and nothing is left outside them: the last token is
    drawn from p / sum p, a child's token. Drawn (``tokens`` None): every draft row is
    ``overdrawn`` (q = p + e, Q = 4/3), so a first rejection (probability 1/4) leaves
    max(p - q, 0) = 0: every later sibling is rejected and the last token drawn from p.
    ``seed`` places e."""
    target, draft = model.target.copy(), model.draft.copy()
    if tokens is None:
        draft = overdrawn(target, np.random.default_rng(seed))
    else:
        kids, paths = children(parents), {-1: ()}
        paths.update(enumerate(node_paths(parents, tokens)))
        for node, below in kids.items():
            if below:
                row = model.index(paths[node])
                target[row] = held_only(target[row], [int(tokens[c]) for c in below])
    return TreeModel(target=target, draft=draft, depth=model.depth)
