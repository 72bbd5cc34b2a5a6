"""torch-tree-rejection: tree and multi-draft speculative verification in plain torch.

Vectorised over requests; one pass over the node slots i = 0 .. N - 1 in order (parents
come before their children and siblings in draft order, so when slot i is reached every
earlier sibling of node i has been tested). Each request keeps its walk: the current node
(-1 the root), its depth, and what its rejected children have spent.

* Draws, from one counter-based stream per request (kernels/counter_uniforms.py: keyed by
  (seed, b), by its own seed per request, fresh for an unseeded one): a float64 coin per
  tested child (drawn children: draw i for node i) or per node (listed children: draw
  NODE_COIN + r for row r), and Exp(1) noise -log u (draw NOISE_INDEX + v) at the tokens of
  positive residual weight of the one row each request draws its last token from.
* Listed children (draft_probs None): child j of the current node, token x_j, is accepted
  iff u < P_j = p(x_1) + ... + p(x_j) (float64), u the node's coin (the first j with
  u < P_j: child j with probability p(x_j)).
* Drawn children: after j rejections at the node the residual is w_j = max(p - C_j q, 0)
  with C_0 = 0, C_(j+1) = C_j + c_j, c_0 = 1, c_j = sum w_j (a pass over the row, made only
  when another child is tested); child x is accepted iff w_j(x) > 0 and
  u q(x) c_j < w_j(x) in float64: with probability min(1, p_j(x) / q(x)), p_j = w_j / c_j.
* Greedy requests accept the first child whose token is the row's argmax (the first
  maximum).
* The last token: the argmax (greedy); else argmax_v w(v) / e_v over the residual at the
  last node: max(p - C q, 0) (drawn), p without the children's tokens (listed), p at a
  leaf; p itself where that has no mass (the contract's fallback for an empty residual).

Output: int64 [B, D + 1], D the batch's deepest path (the narrowest width the contract
allows; the host reads D once).

Each step is a small function; ``Pieces`` names them so that a mutant
(kernels/mutants/tree_rejection_mutants.py) swaps one and keeps the rest.

Memory traffic: two gathered probabilities per tested child, one row pair per rejection
followed by another drawn sibling, the argmax of every target row when the batch holds a
greedy request (the clear version reads them all), and one residual row per request with
its float64 noise at the M tokens of positive weight (about 10 passes of 8-byte
temporaries over M).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch

from sampling_harness.kernels.counter_uniforms import request_keys, uniforms
from sampling_harness.kernels.meta import per_request_seeds

NODE_COIN = 2**19        # listed children: the coin of row r is draw NODE_COIN + r
NOISE_INDEX = 2**20      # the last token's noise at token v: draw NOISE_INDEX + v


class Draws(NamedTuple):
    """A request's random numbers: ``coin(index [B]) -> float64 [B]``, and
    ``noise(requests [R], weights [R, V]) -> float64 [R, V]`` (Exp(1) where the weight is
    positive, 1 elsewhere)."""

    coin: Callable
    noise: Callable


def counter_draws(seed, batch: int, nodes: int, vocab: int, device: torch.device) -> Draws:
    """The counter-based streams of the module docstring."""
    keys = request_keys(seed, batch, device)

    def noise(requests: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        rows, tokens = (weights > 0).nonzero(as_tuple=True)
        drawn = torch.ones_like(weights)
        drawn[rows, tokens] = -torch.log(uniforms(keys[requests[rows]], NOISE_INDEX + tokens))
        return drawn

    return Draws(lambda index: uniforms(keys, index), noise)


def given_parents(parent_ids: torch.Tensor) -> torch.Tensor:
    return parent_ids.to(torch.int64)


def own_coin(node: int, current: torch.Tensor) -> torch.Tensor:
    """The coin of a drawn child: its own draw (index = its node slot)."""
    return torch.full_like(current, node)


def accept_listed(u: torch.Tensor, before: torch.Tensor, after: torch.Tensor,
                  p_x: torch.Tensor) -> torch.Tensor:
    """u < P_j: the node's coin against the children's running sum of p (float64)."""
    return u < after


def accept_drawn(u: torch.Tensor, p_x: torch.Tensor, q_x: torch.Tensor, spent: torch.Tensor,
                 norm: torch.Tensor) -> torch.Tensor:
    """w(x) > 0 and u q(x) c < w(x), w = max(p - C q, 0): probability min(1, p_j(x) / q(x))."""
    w = (p_x - spent * q_x).clamp_min(0.0)
    return (w > 0) & (u * q_x * norm < w)


def rejected(spent: torch.Tensor, norm: torch.Tensor) -> torch.Tensor:
    """C after a rejection: C + c (the residual of the residual, max(p - (C + c) q, 0))."""
    return spent + norm


def greedy_argmax(target_probs: torch.Tensor, greedy: torch.Tensor) -> torch.Tensor | None:
    """int64 [B, N + 1]: every row's argmax (the first maximum), when a request is greedy."""
    return target_probs.argmax(dim=2) if bool(greedy.any()) else None


def verify(x: torch.Tensor, best: torch.Tensor | None, sampled: torch.Tensor,
           greedy: torch.Tensor) -> torch.Tensor:
    """Greedy requests accept the argmax, the others by their sampled test."""
    return sampled if best is None else torch.where(greedy, x == best, sampled)


def residual(target_rows: torch.Tensor, draft_rows: torch.Tensor | None,
             spent: torch.Tensor, children: torch.Tensor) -> torch.Tensor:
    """float64 [R, V]: where the last token is drawn: max(p - C q, 0) (drawn children; C = 0
    at a leaf gives p), or p without the tokens ``children`` (bool [R, V]) marks (listed);
    p itself where that has no mass."""
    p = target_rows.to(torch.float64)
    if draft_rows is None:
        left = torch.where(children, 0.0, p)
    else:
        left = (p - spent[:, None] * draft_rows.to(torch.float64)).clamp_min(0.0)
    empty = ~(left > 0).any(dim=1, keepdim=True)
    return torch.where(empty, p, left)


def race(weights: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """int64 [R]: argmax_v w(v) / e_v, token v with probability w(v) / sum w; zero weights
    score -1 (never NaN, never a winner)."""
    return torch.where(weights > 0, weights / noise, -1.0).argmax(dim=1)


@dataclass(frozen=True)
class Pieces:
    """The swappable steps (the defaults make ``tree_rejection_torch``)."""

    parents: Callable = given_parents
    draws: Callable = counter_draws
    sibling_coin: Callable = own_coin
    argmax: Callable = greedy_argmax
    accept_listed: Callable = accept_listed
    accept_drawn: Callable = accept_drawn
    rejected: Callable = rejected
    verify: Callable = verify
    residual: Callable = residual
    race: Callable = race


class Walk:
    """Every request's state: current node, depth, the path so far, and at the current node
    the coin (listed), the running sum P, and C, c, whether c is stale (drawn)."""

    def __init__(self, batch: int, width: int, device: torch.device):
        self.current = torch.full((batch,), -1, dtype=torch.int64, device=device)
        self.depth = torch.zeros(batch, dtype=torch.int64, device=device)
        self.path = torch.full((batch, width), -1, dtype=torch.int64, device=device)
        self.before = torch.zeros(batch, dtype=torch.float64, device=device)
        self.spent = torch.zeros(batch, dtype=torch.float64, device=device)
        self.norm = torch.ones(batch, dtype=torch.float64, device=device)
        self.stale = torch.zeros(batch, dtype=torch.bool, device=device)

    def advance(self, accepted: torch.Tensor, node: int, token: torch.Tensor) -> None:
        """Requests that ``accepted`` node ``node`` (token ``token``) move to it."""
        rows = accepted.nonzero().squeeze(1)
        self.path[rows, self.depth[rows]] = token[rows]
        self.depth += accepted
        self.current = torch.where(accepted, node, self.current)
        self.before = torch.where(accepted, 0.0, self.before)
        self.spent = torch.where(accepted, 0.0, self.spent)
        self.norm = torch.where(accepted, 1.0, self.norm)
        self.stale &= ~accepted


def residual_mass(target: torch.Tensor, draft: torch.Tensor, batch_rows: torch.Tensor,
                  rows: torch.Tensor, spent: torch.Tensor) -> torch.Tensor:
    """float64 [R]: c = sum_v max(p - C q, 0) of the given rows (a pass over each)."""
    p = target[batch_rows, rows].to(torch.float64)
    q = draft[batch_rows, rows].to(torch.float64)
    return (p - spent[:, None] * q).clamp_min(0.0).sum(dim=1)


def test_children(tokens, parents, draft, target, greedy, draws, pieces, walk, best):
    """The pass over the node slots: each node that is the next untried child of its
    request's current node is tested, and accepted or rejected."""
    batch, nodes = tokens.shape
    index = torch.arange(batch, device=tokens.device)
    for i in range(nodes):
        x = tokens[:, i]
        live = (x >= 0) & (parents[:, i] == walk.current)
        if not bool(live.any()):
            continue
        row = walk.current + 1
        p_x = target[index, row, x.clamp(min=0)].to(torch.float64)
        if draft is None:
            u = draws.coin(NODE_COIN + row)
            after = walk.before + p_x
            sampled = pieces.accept_listed(u, walk.before, after, p_x)
            walk.before = torch.where(live, after, walk.before)
        else:
            q_x = draft[index, row, x.clamp(min=0)].to(torch.float64)
            stale = (live & walk.stale & ~greedy).nonzero().squeeze(1)
            if stale.numel():
                walk.norm[stale] = residual_mass(target, draft, stale, row[stale],
                                                 walk.spent[stale])
                walk.stale[stale] = False
            u = draws.coin(pieces.sibling_coin(i, walk.current))
            sampled = pieces.accept_drawn(u, p_x, q_x, walk.spent, walk.norm)
        accepted = live & pieces.verify(x, None if best is None else best[index, row],
                                        sampled, greedy)
        if draft is not None:
            miss = live & ~accepted & ~greedy
            walk.spent = torch.where(miss, pieces.rejected(walk.spent, walk.norm), walk.spent)
            walk.stale |= miss
        walk.advance(accepted, i, x)


def last_tokens(tokens, parents, draft, target, greedy, draws, pieces, walk, best):
    """int64 [B]: the token each request draws (or takes, greedy) at its last node."""
    batch = tokens.shape[0]
    index = torch.arange(batch, device=tokens.device)
    row = walk.current + 1
    emitted = torch.zeros(batch, dtype=torch.int64, device=tokens.device)
    sampled = (~greedy).nonzero().squeeze(1)
    if sampled.numel():
        r = row[sampled]
        vocab = target.shape[2]
        kids = (parents[sampled] == walk.current[sampled, None]) & (tokens[sampled] >= 0)
        children = torch.zeros((sampled.numel(), vocab), dtype=torch.int64,
                               device=tokens.device).scatter_add_(
            1, tokens[sampled].clamp(min=0), kids.to(torch.int64)) > 0
        weights = pieces.residual(target[sampled, r], None if draft is None
                                  else draft[sampled, r], walk.spent[sampled], children)
        emitted[sampled] = pieces.race(weights, draws.noise(sampled, weights))
    if best is not None:
        emitted = torch.where(greedy, best[index, row], emitted)
    return emitted


def tree_verify(draft_token_ids, parent_ids, draft_probs, target_probs, greedy, seed,
                pieces: Pieces = Pieces()) -> torch.Tensor:
    """Family ``tree-rejection`` built from ``pieces``: int64 [B, D + 1]."""
    tokens = draft_token_ids.to(torch.int64)
    parents = pieces.parents(parent_ids)
    batch, nodes = tokens.shape
    device = target_probs.device
    width = deepest(parents, tokens) + 1
    draws = pieces.draws(seed, batch, nodes, target_probs.shape[2], device)
    best = pieces.argmax(target_probs, greedy)
    walk = Walk(batch, width, device)
    test_children(tokens, parents, draft_probs, target_probs, greedy, draws, pieces, walk,
                  best)
    emitted = last_tokens(tokens, parents, draft_probs, target_probs, greedy, draws, pieces,
                          walk, best)
    return walk.path.scatter_(1, walk.depth[:, None], emitted[:, None])


def deepest(parents: torch.Tensor, tokens: torch.Tensor) -> int:
    """D, the deepest path's length (a parent comes before its children)."""
    if tokens.numel() == 0:
        return 0
    depth = torch.zeros_like(tokens)
    for i in range(tokens.shape[1]):
        above = depth.gather(1, parents[:, i:i + 1].clamp(min=0)).squeeze(1)
        depth[:, i] = torch.where(tokens[:, i] >= 0,
                                  torch.where(parents[:, i] < 0, 1, above + 1), 0)
    return int(depth.max())


@per_request_seeds
def tree_rejection_torch(draft_token_ids: torch.Tensor, parent_ids: torch.Tensor, draft_probs,
                         target_probs: torch.Tensor, greedy: torch.Tensor, seed) -> torch.Tensor:
    """Family ``tree-rejection``: int64 [B, D + 1], D the deepest path in the batch."""
    return tree_verify(draft_token_ids, parent_ids, draft_probs, target_probs, greedy, seed)
