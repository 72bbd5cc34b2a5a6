"""The exact law of a tree verifier's output, in float64 (family ``tree-rejection``).

A request is a tree of drafted tokens (``parents[i]`` the parent of node i, -1 for a child
of the root, parents before children, siblings in draft order) and one target row (and one
draft row) per node and for the root, each a function of the node's path (``TreeModel``).
The verifier walks from the root; at a node with target row p and children c_1..c_k:

* listed children (drafted deterministically, ``tokens`` given, siblings distinct): one
  coin u per node; child j is accepted iff P_{j-1} <= u < P_j, P_j = p(x_1) + ... + p(x_j)
  (float64 sums of the float32 values), so with probability min(P_j, 1) - min(P_{j-1}, 1);
  if none is, the token is drawn from p with the children's tokens removed, normalised;
* drawn children (``tokens`` None: each child drawn independently from the node's draft
  row q, normalised by Q = sum q): children are tested in order against the current
  residual. With w_0 = p, C_0 = 0, c_0 = 1 and, after j rejections, C_j = C_{j-1} + c_{j-1},
  w_j = max(p - C_j q, 0), c_j = sum w_j: child j (drawn as x) is accepted with probability
  min(1, w_j(x) / (c_j q(x))), so P(x drawn and accepted) = min(q(x), w_j(x) / c_j) / Q and
  P(rejected) = sum_x max(q(x) - w_j(x) / c_j, 0) / Q; after k rejections the token is drawn
  from w_k / c_k (a leaf: p / sum p). The closed form max(p - C_j q, 0) is the residual of
  the residual: max(max(w - a q, 0) - b q, 0) = max(w - (a + b) q, 0) for q >= 0;
* an accepted child continues the walk from its node; a drawn token ends the sequence;
* an empty residual (no positive weight where the token must be drawn: listed children
  holding all of p's support while P_k < 1, or drawn rows with max(p - C_j q, 0) = 0 after a
  rejection; possible only where rows are not exact laws: float32 rounding, a draft row of
  mass above 1, a target row of mass below 1): the token is drawn from p / sum p instead,
  and may then be a child's token (``fallback``); drawn siblings tested after an empty
  residual are rejected (w = 0).

So the returned sequence y_1 .. y_m follows the target model: for listed children exactly
(for any fixed tree), for drawn children averaged over the draws of the tree. The law is
enumerated over every path (``sequence_law``), as dense arrays by length: index
``sum_j y_j V^(l - 1 - j)`` in the array of length l. Greedy requests follow the argmax
(the first maximum) and emit it where the node has no child of that token
(``greedy_output``).

Rows are never renormalised for the acceptance tests (u q(x) < p(x) with p as given, as the
chain family does); float32 rows sum to 1 within about 1e-7, which bounds the difference
from the normalised law. Only numpy here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np


def path_offsets(vocab: int, depth: int) -> np.ndarray:
    """int64 [depth + 2]: the first row index of paths of each length 0..depth + 1 in a
    table holding every path of length <= depth (V^l rows of length l, base-V order)."""
    return np.concatenate([[0], np.cumsum(vocab ** np.arange(depth + 1, dtype=np.int64))])


@dataclass(frozen=True, eq=False)
class TreeModel:
    """A target model and a draft model as functions of the path: float32 rows [paths, V]
    for every path of length <= ``depth``; the path (y_1 .. y_l) is row
    ``offsets[l] + sum_j y_j V^(l - 1 - j)``."""

    target: np.ndarray
    draft: np.ndarray
    depth: int

    def __post_init__(self):
        rows = int(path_offsets(self.vocab, self.depth)[-1])
        if self.target.shape != (rows, self.vocab) or self.draft.shape != self.target.shape:
            raise ValueError(f"a model of depth {self.depth} over V = {self.vocab} holds "
                             f"{rows} rows; got {self.target.shape} and {self.draft.shape}")

    @property
    def vocab(self) -> int:
        return self.target.shape[1]

    def index(self, path) -> int:
        code = 0
        for token in path:
            code = code * self.vocab + int(token)
        return int(path_offsets(self.vocab, self.depth)[len(path)]) + code

    def rows(self, path) -> tuple[np.ndarray, np.ndarray]:
        """(p, q): the float32 target and draft rows after ``path``."""
        row = self.index(path)
        return self.target[row], self.draft[row]


def children(parents) -> dict[int, list[int]]:
    """node (-1: the root) -> its children in draft order."""
    kids: dict[int, list[int]] = {-1: []}
    for i, parent in enumerate(parents):
        kids.setdefault(i, [])
        kids[int(parent)].append(i)
    return kids


def depths(parents) -> np.ndarray:
    """int64 [N]: the path length of each node (a child of the root has depth 1)."""
    out = np.zeros(len(parents), dtype=np.int64)
    for i, parent in enumerate(parents):
        if parent >= i:
            raise ValueError(f"node {i} has parent {parent}: parents must come first")
        out[i] = 1 if parent < 0 else out[parent] + 1
    return out


def node_paths(parents, tokens) -> list[tuple[int, ...]]:
    """The path (tokens from the root) of every node of a tree with fixed tokens."""
    paths: list[tuple[int, ...]] = []
    for parent, token in zip(parents, tokens, strict=True):
        paths.append((() if parent < 0 else paths[parent]) + (int(token),))
    return paths


def listed_steps(p, child_tokens) -> tuple[np.ndarray, float, np.ndarray | None]:
    """(take [k], stop, final [V]) at a node with listed children: take[j] = P(child j
    accepted) = min(P_j, 1) - min(P_{j-1}, 1), stop = 1 - min(P_k, 1), and the law of the
    drawn token, p without the children's tokens, normalised (None where stop = 0); where
    the children hold all of p's support (P_k < 1 only if p sums below 1), p / sum p
    (``fallback``)."""
    p64 = np.asarray(p, dtype=np.float64)
    take, before = np.zeros(len(child_tokens)), 0.0
    for j, token in enumerate(child_tokens):
        after = before + p64[int(token)]
        take[j] = min(after, 1.0) - min(before, 1.0)
        before = after
    stop = 1.0 - min(before, 1.0)
    if stop <= 0:
        return take, 0.0, None
    left = p64.copy()
    left[np.asarray(child_tokens, dtype=np.int64)] = 0.0
    return take, stop, fallback(left, p64)


def fallback(left: np.ndarray, p64: np.ndarray) -> np.ndarray:
    """The law of the drawn token: the residual ``left`` normalised, or p / sum p where the
    residual is empty (no positive weight)."""
    if left.sum() > 0:
        return left / left.sum()
    if not p64.sum() > 0:
        raise ValueError("a target row without mass: nothing to draw")
    return p64 / p64.sum()


def drawn_steps(p, q, k: int) -> tuple[np.ndarray, float, np.ndarray | None]:
    """(take [k, V], stop, final [V]) at a node whose k children are drawn from q / Q:
    take[j, x] = P(children 0..j-1 rejected, child j drawn as x and accepted), stop =
    P(all k rejected), final the law of the drawn token w_k / c_k (module docstring).
    After a rejection that leaves w_j without mass (c_j = 0: possible where q sums above 1)
    every later child is rejected (w = 0) and the token is drawn from p / sum p
    (``fallback``)."""
    p64, q64 = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    total = q64.sum()
    take, reach, spent, norm = np.zeros((k, p64.size)), 1.0, 0.0, 1.0
    for j in range(k):
        if total <= 0:
            raise ValueError("a draft row without mass cannot draw children")
        if norm > 0:                                 # else w = 0: the child is rejected
            w = np.maximum(p64 - spent * q64, 0.0)
            take[j] = reach * np.minimum(q64, w / norm) / total
            reach *= float(np.maximum(q64 - w / norm, 0.0).sum()) / total
        spent += norm
        norm = float(np.maximum(p64 - spent * q64, 0.0).sum())
        if reach <= 0:
            return take, 0.0, None
    return take, reach, fallback(np.maximum(p64 - spent * q64, 0.0), p64)


def first_token_law(p, q, k: int = 0, child_tokens=None) -> np.ndarray:
    """float64 [V]: the law of y_1 at a root with ``k`` drawn children (draft row q) or the
    listed ``child_tokens``: accepted children plus the drawn token. Lossless: p / sum p
    up to the float32 rows' distance from a sum of 1."""
    if child_tokens is not None:
        take, stop, final = listed_steps(p, child_tokens)
        law = np.zeros(np.size(p))
        np.add.at(law, np.asarray(child_tokens, dtype=np.int64), take)
    else:
        accepted, stop, final = drawn_steps(p, q, k)
        law = accepted.sum(axis=0)
    return law + (stop * final if final is not None else 0.0)


def _shapes(parents) -> dict[int, tuple]:
    """node -> its subtree's shape: the nested tuple of its children's shapes, in order."""
    kids, shape = children(parents), {}
    for node in sorted(kids, reverse=True):          # children before their parents
        shape[node] = tuple(shape[c] for c in kids[node])
    return shape


def _height(shape: tuple) -> int:
    return 1 + max((_height(s) for s in shape), default=0) if shape else 0


def sequence_law(model: TreeModel, parents, tokens=None) -> list[np.ndarray]:
    """The exact law of the returned sequence: one float64 array per length l = 1 .. D + 1
    (D the tree's depth), of V^l cells (base-V code of the tokens, the first the most
    significant). ``tokens`` None: children drawn from the model's draft rows on every
    call; else listed children with these tokens. Sums to 1 (up to float32 row sums)."""
    vocab, kids, shapes = model.vocab, children(parents), _shapes(parents)

    def prepend(out: list[np.ndarray], token: int, mass: float, sub: list[np.ndarray]):
        for length, law in enumerate(sub, start=1):
            block = vocab ** length
            out[length][token * block:(token + 1) * block] += mass * law

    @cache
    def drawn(path: tuple[int, ...], shape: tuple) -> list[np.ndarray]:
        p, q = model.rows(path)
        out = [np.zeros(vocab ** length) for length in range(1, _height(shape) + 2)]
        take, stop, final = drawn_steps(p, q, len(shape))
        for j, sub_shape in enumerate(shape):
            for token in np.flatnonzero(take[j] > 0):
                prepend(out, int(token), take[j, token], drawn(path + (int(token),), sub_shape))
        if final is not None:
            out[0] += stop * final
        return out

    def listed(path: tuple[int, ...], node: int) -> list[np.ndarray]:
        p, _ = model.rows(path)
        out = [np.zeros(vocab ** length) for length in range(1, _height(shapes[node]) + 2)]
        child_tokens = [int(tokens[c]) for c in kids[node]]
        take, stop, final = listed_steps(p, child_tokens)
        for j, child in enumerate(kids[node]):
            if take[j] > 0:
                prepend(out, child_tokens[j], take[j],
                        listed(path + (child_tokens[j],), child))
        if final is not None:
            out[0] += stop * final
        return out

    law = drawn((), shapes[-1]) if tokens is None else listed((), -1)
    height = int(depths(parents).max(initial=0))
    return law + [np.zeros(vocab ** length) for length in range(len(law) + 1, height + 2)]


def flat_law(law_by_length: list[np.ndarray]) -> np.ndarray:
    """The cells of all lengths back to back (length 1 first): the tally's cell order."""
    return np.concatenate(law_by_length)


def cell_offsets(vocab: int, max_length: int) -> np.ndarray:
    """int64 [max_length + 1]: the first cell of sequences of length l (index l; l >= 1)
    in ``flat_law`` order."""
    return np.concatenate([[0, 0], np.cumsum(vocab ** np.arange(1, max_length + 1,
                                                                dtype=np.int64))])


def accepted_length_law(law_by_length: list[np.ndarray]) -> np.ndarray:
    """float64 [D + 1]: P(A = a), A = the number of accepted tokens (the length minus 1)."""
    return np.array([law.sum() for law in law_by_length])


def mean_accepted(law_by_length: list[np.ndarray]) -> float:
    """E[A], the mean number of accepted draft tokens per verification."""
    lengths = accepted_length_law(law_by_length)
    return float(np.dot(np.arange(lengths.size), lengths))


def greedy_output(target_rows, parents, tokens, width: int) -> np.ndarray:
    """int64 [width]: the greedy row of one request (row 0 of ``target_rows`` the root's,
    row i + 1 node i's): from the root, while the node has a child whose token is its
    row's argmax (the first maximum), move to the first such child; then emit the argmax;
    -1 after."""
    best = np.argmax(np.asarray(target_rows), axis=1)
    kids = children(parents)
    out, node = [], -1
    while True:
        token = int(best[node + 1])
        out.append(token)
        match = [c for c in kids[node] if int(tokens[c]) == token]
        if not match:
            break
        node = match[0]
    if len(out) > width:
        raise ValueError(f"width {width} cannot hold the greedy row {out}")
    return np.array(out + [-1] * (width - len(out)), dtype=np.int64)
