"""Greedy trees of family ``tree-rejection``: exact, compared with the float64 reference.

A greedy request follows the argmax (the lowest index among tied maxima): from the root,
while the node has a child whose token is its row's argmax it moves to that child, and it
emits the argmax where no child holds it (reference/tree_rejection.py ``greedy_output``).
The output is a function of the inputs alone, so every greedy row must equal the
reference's exactly: in trees whose children sit on the argmax at every depth (the walk
reaches the leaf and emits the leaf's argmax), on ties at the maximum with children on the
tied tokens in either order (only the lowest index is followed), with the argmax among the
children at any sibling position or absent; listed and drawn trees, greedy and random
requests mixed, V = 37 and 1031. Each batch is called twice under two allocator poisons.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.checks.greedy import greedy_equal
from sampling_harness.reference.tree_rejection import children, greedy_output
from sampling_harness.suites.tree_rejection.batches import stack
from sampling_harness.verdict import Outcome

SHAPES = ((-1, 0, 1, 2, 3, 4), (-1,) * 8, (-1, -1, -1, 0, 0, 0, 1, 1, 3, 3, 4, 8, 8),
          (-1, -1, 0, 2, 2, 1, 5), ())


def greedy_tree(parents, vocab: int, rng: np.random.Generator, kind: str) -> dict:
    """Rows and distinct sibling tokens. ``kind``: "argmax path" (some child of every node
    holds its argmax), "ties" (2 or 3 tokens tied at each row's maximum, children on tied
    tokens, the highest first), "random" (the argmax a child or not)."""
    nodes = len(parents)
    target = rng.random((nodes + 1, vocab)).astype(np.float32) * 0.5
    tokens = np.zeros(nodes, np.int64)
    for node, kids in sorted(children(parents).items()):
        row = target[node + 1]
        if kind == "ties":
            tied = rng.choice(vocab, size=int(rng.integers(2, 4)), replace=False)
            row[tied] = 1.0
            order = list(np.sort(tied)[::-1])
        else:
            order = [int(np.argmax(row))] if kind == "argmax path" or rng.random() < 0.5 else []
        others = [int(t) for t in rng.permutation(vocab) if t not in order]
        chosen = (order + others)[:len(kids)]
        chosen = list(rng.permutation(chosen)) if kind == "random" else chosen
        tokens[kids] = chosen
    target /= target.sum(1, keepdims=True)
    draft = rng.random((nodes + 1, vocab)).astype(np.float32) + 0.01
    return {"parents": np.asarray(parents, np.int64), "tokens": tokens,
            "target": target.astype(np.float32),
            "draft": (draft / draft.sum(1, keepdims=True)).astype(np.float32), "greedy": True}


def batches(seed: int) -> dict[str, tuple[list[dict], int, bool]]:
    """name -> (requests, V, drawn); every other request of the mixed batches random."""
    rng = np.random.default_rng(seed)
    found = {}
    for kind, vocab, drawn in (("argmax path", 37, False), ("ties", 37, True),
                               ("random", 1031, False), ("ties", 1031, False),
                               ("argmax path", 37, True)):
        requests = [greedy_tree(shape, vocab, rng, kind) for shape in SHAPES for _ in range(2)]
        mixed = kind == "random" or drawn
        for b, request in enumerate(requests):
            request["greedy"] = not mixed or b % 2 == 0
        found[f"{kind}, {'drawn' if drawn else 'listed'}, V = {vocab}"] = (requests, vocab, drawn)
    return found


def greedy(ctx) -> Outcome:
    """Every greedy request of ``batches`` equals the reference's ``greedy_output``."""

    def compared(name: str, requests: list[dict], vocab: int, drawn: bool):
        def expected(b: int, width: int) -> np.ndarray:
            request = requests[b]
            return greedy_output(request["target"], request["parents"], request["tokens"],
                                 width)

        rows = [b for b, request in enumerate(requests) if request["greedy"]]
        return name, stack(requests, vocab, ctx.device, drawn), rows, expected

    return greedy_equal(ctx, (compared(name, *batch)
                              for name, batch in batches(ctx.seed).items()))
