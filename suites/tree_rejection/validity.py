"""Validity of family ``tree-rejection``: exact checks, no statistics and no alpha.

Every call is validated by the runner (suites/tree_rejection/contract.py): the shape
[B, D + 1], tokens then -1, the accepted tokens a path of the tree following parent links,
each of positive target probability at its node, the last token of positive probability
and no child's token at the last node, greedy rows taking the argmax. This check adds the
edge batches (no nodes, one request, ragged trees with padding, greedy and random mixed,
V = 1, 2 and 4099, listed and drawn children with repeated siblings, forced accepts and
rejects), each called twice with one seed under two allocator poisons (identical outputs
are due: an unwritten slot differs for certain), then, per draft mode, ``budget.never_tests``
coins compared at children of target probability 0: V = 2, p = (0, 1) at the root, one
listed child of token 0 (one node coin each), or eight drawn children from q = (1, 0)
(eight coins each). A kernel that accepts such a child at any per-coin rate above the
stated minimum is caught with probability ``budget.power``; a float32 coin compared with
``<=`` (0 with probability 2^-24) needs about 7.7e7 coins, 2^27 at standard.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.stats.binomial import never_rate
from sampling_harness.suites.tree_rejection.batches import (
    drawn_tokens,
    per_call,
    request_of,
    stack,
)
from sampling_harness.suites.tree_rejection.models import PathModel, listed_tokens
from sampling_harness.verdict import Outcome

EAGLE = (-1, -1, -1, 0, 0, 0, 1, 1, 3, 3, 4, 8, 8)
RAGGED = ((), (-1, 0, 1, 2, 3), (-1,) * 8, EAGLE, (-1, -1, 0, 2, 2, 1, 5))


def forced(vocab: int, seed: int) -> list[dict]:
    """Listed chains whose fate is certain: a child one-hot in its parent's row (accepted),
    a child of probability 0 (never accepted), at the first and last token."""
    rng = np.random.default_rng(seed)
    requests = []
    for first in (0, vocab - 1):
        depth = 4
        target = rng.random((depth + 1, vocab)).astype(np.float32) + 0.1
        tokens = np.array([first, vocab - 1 - first, first, int(rng.integers(vocab))])
        target[0] = 0.0
        target[0, tokens[0]] = 1.0                       # accepted for certain
        target[2, tokens[2]] = 0.0                       # rejected for certain
        target /= target.sum(1, keepdims=True)
        requests.append({"parents": np.arange(-1, depth - 1), "tokens": tokens,
                         "target": target.astype(np.float32), "draft": target.copy(),
                         "greedy": False})
    return requests


def batch_of(shapes, vocab: int, seed: int, drawn: bool, greedy_every: int = 3) -> list[dict]:
    """One request per shape over a model of ``vocab`` tokens; every third greedy."""
    rng = np.random.default_rng(seed)
    model = PathModel(vocab, seed, ("typical", "weak-draft", "peaked-target"))
    requests = []
    for b, shape in enumerate(shapes):
        tokens = (drawn_tokens(model, shape, rng) if drawn else
                  listed_tokens(model, shape, "random distinct", seed + b))
        requests.append(request_of(model, shape, tokens, greedy=b % greedy_every == 1))
    return requests


def edge_batches(seed: int) -> dict[str, tuple[list[dict], int, bool]]:
    """name -> (requests, V, drawn)."""
    chain = (-1, 0, 1, 2, 3, 4, 5, 6)
    return {
        "no nodes, 3 requests, listed": (batch_of([(), (), ()], 5, seed, False), 5, False),
        "no nodes, 3 requests, drawn": (batch_of([(), (), ()], 5, seed, True), 5, True),
        "B = 1, EAGLE-like, drawn": (batch_of([EAGLE], 33, seed, True), 33, True),
        "ragged with padding, listed": (batch_of(RAGGED, 129, seed, False), 129, False),
        "ragged with padding, drawn (repeated siblings)":
            (batch_of(RAGGED + RAGGED, 5, seed, True), 5, True),
        "V = 1, chain of 8, drawn": (batch_of([chain], 1, seed, True), 1, True),
        "V = 2, star of 8, drawn": (batch_of([(-1,) * 8] * 4, 2, seed, True), 2, True),
        "V = 4099, EAGLE-like, listed": (batch_of([EAGLE, ()], 4099, seed, False), 4099, False),
        "V = 4099, EAGLE-like, drawn": (batch_of([EAGLE, ()], 4099, seed, True), 4099, True),
        "forced accepts and rejects, listed": (forced(1031, seed), 1031, False),
    }


def never_inputs(trees: int, drawn: bool, device: torch.device) -> dict:
    """V = 2, p = (0, 1) at the root: one listed child of token 0, or eight drawn children
    from q = (1, 0); every child has target probability 0."""
    nodes = 8 if drawn else 1
    target = torch.tensor([0.0, 1.0], device=device).expand(trees, nodes + 1, 2).contiguous()
    draft = torch.tensor([1.0, 0.0], device=device).expand(trees, nodes + 1, 2).contiguous()
    return {"draft_token_ids": torch.zeros((trees, nodes), dtype=torch.int64, device=device),
            "parent_ids": torch.full((trees, nodes), -1, dtype=torch.int64, device=device),
            "draft_probs": draft if drawn else None, "target_probs": target,
            "greedy": torch.zeros(trees, dtype=torch.bool, device=device)}


def never_offered(ctx, seeds) -> dict[str, int]:
    """Per draft mode, the coins compared at children of probability 0 (the runner fails an
    accepted one)."""
    offered = {}
    for drawn in (False, True):
        coins_per_tree = 8 if drawn else 1
        trees = -(-ctx.budget.never_tests // coins_per_tree)
        step = min(trees, per_call(ctx, coins_per_tree, 2))
        inputs, done = never_inputs(step, drawn, ctx.device), 0
        while done < trees:
            n = min(step, trees - done)
            ctx.runner.call({k: None if v is None else v[:n] for k, v in inputs.items()},
                            next(seeds))
            done += n
        offered["drawn" if drawn else "listed"] = done * coins_per_tree
    return offered


def validity(ctx) -> Outcome:
    seeds = ctx.seeds()
    batches = edge_batches(ctx.seed)
    for requests, vocab, drawn in batches.values():
        ctx.runner.call_twice(stack(requests, vocab, ctx.device, drawn), next(seeds))
    offered = never_offered(ctx, seeds)
    least = min(offered.values())
    return Outcome(
        True, f"{ctx.runner.calls} calls valid; {len(batches)} edge batches gave the same "
              f"output under two allocator poisons; no child of target probability 0 "
              f"accepted in {offered['listed']:,} listed and {offered['drawn']:,} drawn coins",
        samples=sum(offered.values()), min_detectable_effect=never_rate(least, ctx.budget.power),
        effect="per-coin rate of accepting a child of target probability 0 (each mode)",
        details={"edge_batches": list(batches), "coins": offered})
