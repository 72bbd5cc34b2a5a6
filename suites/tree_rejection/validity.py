"""Validity of family ``tree-rejection``: exact checks, no statistics and no alpha.

Every call is validated by the runner (suites/tree_rejection/contract.py): the shape
[B, W] with D + 1 <= W <= N + 1, tokens then -1 to the row's end, the accepted tokens a
path of the tree following parent links, each of positive target probability at its node,
the last token of positive probability and no child's token at the last node (unless the
residual there is empty), greedy rows taking the argmax. This check adds the
edge batches (no nodes, one request, ragged trees with padding, greedy and random mixed,
V = 1, 2 and 4099, listed and drawn children with repeated siblings, forced accepts and
rejects), each called twice with one seed under two allocator poisons (identical outputs
are due: an unwritten slot differs for certain), the path batches (quarter sweeps, emptied
residuals: below) once each, then, per draft mode, ``budget.never_tests``
coins compared at children of target probability 0: V = 2, p = (0, 1) at the root, one
listed child of token 0 (one node coin each), or eight drawn children from q = (1, 0)
(eight coins each). A kernel that accepts such a child at any per-coin rate above the
stated minimum is caught with probability ``budget.power``; a float32 coin compared with
``<=`` (0 with probability 2^-24) needs about 7.7e7 coins, 2^27 at standard.

The quarter sweeps (``quarter_sweep``) are listed stars whose children hold half the row and
one other token, the survivor, the other half, so that half the requests reject every child
and must draw the survivor: over V = 64 (one chunk of four quarters of 16 columns; at the
root and one node down), with HELD + 1 = 17 children (more than a Triton program holds in
registers: its slot loop) and with 8 (held), each request's children at every quarter, and
over the requests both the children and the survivor at every column, each column the
survivor of 30 requests (32 with 8 children). A kernel whose residual is wrong at some
columns (a mask or an offset wrong in one quarter, on one path) either leaves a child in,
which it then returns in about 3 % of the requests that hold one there, or removes the
survivor, and the residual left empty sends it to p, a child's token half the time: a
quarter of the requests whose survivor is there, so one wrong column is missed with
probability 0.75^30 = 2e-4. The runner's validation fails either.
(Several chunks of the slot loop: the unit tests, tests/test_tree_rejection_paths.py.)
The emptied requests (``emptied_requests``) empty the
residuals of small trees (models.py ``held_only``, ``overdrawn``) so that about a quarter
of the walks re-draw their last token from p / sum p: listed, p is supported on the node's
children alone, so a token from another row or a fixed one has probability 0 there.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.reference.tree_rejection import children
from sampling_harness.stats.binomial import never_rate
from sampling_harness.suites.tree_rejection.batches import (
    drawn_tokens,
    per_call,
    request_of,
    stack,
)
from sampling_harness.suites.tree_rejection.models import (
    PathModel,
    every_quarter,
    held_only,
    listed_tokens,
    overdrawn,
)
from sampling_harness.suites.tree_rejection.trees import HELD
from sampling_harness.verdict import Outcome

EAGLE = (-1, -1, -1, 0, 0, 0, 1, 1, 3, 3, 4, 8, 8)
RAGGED = ((), (-1, 0, 1, 2, 3), (-1,) * 8, EAGLE, (-1, -1, 0, 2, 2, 1, 5))
EMPTIED_SHAPES = ((-1, -1, 0, 0, 2), (-1, 0, 1), (-1, -1, -1))
SWEEP = 2048          # requests of a sweep batch: the interpreter's one program at V = 64


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


def sweep_row(vocab: int, kids: np.ndarray, survivor: int) -> np.ndarray:
    """float32 [V]: half the mass on the children ``kids`` (equal shares), half on one other
    token, the ``survivor``: the only token a rejection may draw."""
    row = np.zeros(vocab, np.float32)
    row[kids] = 0.5 / kids.size
    row[survivor] = 0.5
    return row


def sweep_columns(vocab: int, k: int, r: int) -> tuple[np.ndarray, int]:
    """(k children, the survivor) of request r. One chunk (V <= 64): children r + s j mod V,
    s = V // k, at every quarter and over r at every column; the survivor the first column
    after r that no child holds (r + 1 for the sweeps' k = 17 and 8), over r every column.
    Larger V: children dealt over the quarters of every chunk (models.py
    ``every_quarter``) in an order of their own per request, the next dealt the survivor."""
    if vocab > 64:
        dealt = every_quarter(vocab, np.random.default_rng(r))
        return dealt[:k], int(dealt[k])
    kids = (r + (vocab // k) * np.arange(k)) % vocab
    survivor = next(c % vocab for c in range(r + 1, r + vocab) if c % vocab not in kids)
    return kids, survivor


def quarter_sweep(vocab: int, k: int, seed: int, requests: int) -> list[dict]:
    """Listed stars of k children (module docstring): at the root in even requests, in odd
    ones under the root's one child, which the root's one-hot row accepts."""
    rng = np.random.default_rng(seed)
    found = []
    for r in range(requests):
        kids, survivor = sweep_columns(vocab, k, r)
        star = sweep_row(vocab, kids, survivor)
        uniform = np.full(vocab, 1.0 / vocab, np.float32)
        if r % 2:
            first = int(rng.integers(vocab))
            root = np.zeros(vocab, np.float32)
            root[first] = 1.0
            parents, tokens = [-1] + [0] * k, [first, *kids]
            target = np.stack([root, star] + [uniform] * k)
        else:
            parents, tokens = [-1] * k, list(kids)
            target = np.stack([star] + [uniform] * k)
        found.append({"parents": np.array(parents), "tokens": np.array(tokens),
                      "target": target, "draft": target.copy(), "greedy": False})
    return found


def emptied_requests(vocab: int, seed: int, drawn: bool, requests: int = 128) -> list[dict]:
    """Small trees with their residuals emptied (models.py ``held_only``, ``overdrawn``):
    listed, every node with children has p on their tokens alone; drawn, every q = p + e.
    Rows are flat Dirichlet, one per node (no model: validity needs no law); every fifth
    request greedy."""
    rng = np.random.default_rng(seed)
    found = []
    for b in range(requests):
        parents = EMPTIED_SHAPES[b % len(EMPTIED_SHAPES)]
        target = rng.dirichlet(np.ones(vocab), size=len(parents) + 1).astype(np.float32)
        draft = overdrawn(target, rng)
        tokens = np.zeros(len(parents), np.int64)
        for node, below in children(parents).items():
            if not below:
                continue
            if drawn:
                q = draft[node + 1].astype(np.float64)
                tokens[below] = rng.choice(vocab, size=len(below), p=q / q.sum())
            else:
                tokens[below] = rng.choice(vocab, size=len(below), replace=False)
                target[node + 1] = held_only(target[node + 1], tokens[below])
        found.append({"parents": np.array(parents), "tokens": tokens, "target": target,
                      "draft": draft, "greedy": b % 5 == 1})
    return found


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


def path_batches(seed: int) -> dict[str, tuple[list[dict], int, bool]]:
    """name -> (requests, V, drawn): the quarter sweeps and the emptied residuals (module
    docstring; drawn ones: the law check's ``emptied`` kind), each called once."""
    return {
        f"quarter sweep, {HELD + 1} children, and emptied residuals, V = 64, listed":
            (quarter_sweep(64, HELD + 1, seed, SWEEP - 128) + emptied_requests(64, seed, False),
             64, False),
        "quarter sweep, 8 children, V = 64, listed": (quarter_sweep(64, 8, seed, SWEEP), 64,
                                                      False),
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
    batches, paths = edge_batches(ctx.seed), path_batches(ctx.seed)
    for requests, vocab, drawn in batches.values():
        ctx.runner.call_twice(stack(requests, vocab, ctx.device, drawn), next(seeds))
    for requests, vocab, drawn in paths.values():
        ctx.runner.call(stack(requests, vocab, ctx.device, drawn), next(seeds))
    offered = never_offered(ctx, seeds)
    least = min(offered.values())
    return Outcome(
        True, f"{ctx.runner.calls} calls valid; {len(batches)} edge batches gave the same "
              f"output under two allocator poisons; {len(paths)} batches of quarter sweeps "
              f"and emptied residuals valid; no child of target probability 0 accepted in "
              f"{offered['listed']:,} listed and {offered['drawn']:,} drawn coins",
        samples=sum(offered.values()), min_detectable_effect=never_rate(least, ctx.budget.power),
        effect="per-coin rate of accepting a child of target probability 0 (each mode)",
        details={"edge_batches": list(batches), "path_batches": list(paths), "coins": offered})
