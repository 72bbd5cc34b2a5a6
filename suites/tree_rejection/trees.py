"""Hypothesis strategies for family ``tree-rejection``: trees and cases from small named pieces.

A shape is its parent tuple (parents first, siblings in draft order):

* ``chains``: one child per node, depth 1 .. 5 (the chain family's case);
* ``stars``: 2 .. 8 children of the root (multi-draft verification of one position;
  one child is a chain);
* ``eagle_like``: depth 4, the root and then the first one or two nodes of each level (a
  dynamic tree keeps expanding its best candidates) expanding into 2 .. 4 children;
* ``random_shapes``: up to 10 nodes, each under the root or under any earlier node of
  depth < 4.

A case adds a draft mode (listed children, chosen from the model by a named rule, or drawn
children, redrawn on every call: siblings then repeat), a vocabulary (listed: more tokens
than the widest node has children; drawn: 2 .. 5, so that the exact law, enumerated over
every path, stays small) and a model (a seed and a mix of row kinds). Hypothesis's first
example is its simplest one; ``cases`` sets it aside.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from sampling_harness.reference.tree_rejection import children, depths
from sampling_harness.strategies.seeded import examples
from sampling_harness.suites.tree_rejection.batches import TreeCase
from sampling_harness.suites.tree_rejection.models import (
    KINDS,
    LISTED_CHOICES,
    build_model,
    listed_tokens,
)

SHAPE_KINDS = ("chain", "star", "eagle", "random")
MODES = ("listed", "drawn")
KIND_MIXES = (("typical",), ("weak-draft",), ("typical", "weak-draft"), KINDS)
MAX_DRAWN_VOCAB = 5


def chains(max_depth: int = 5) -> st.SearchStrategy[tuple[int, ...]]:
    return st.integers(1, max_depth).map(lambda d: (-1,) + tuple(range(d - 1)))


def stars(max_children: int = 8) -> st.SearchStrategy[tuple[int, ...]]:
    return st.integers(2, max_children).map(lambda k: (-1,) * k)


@st.composite
def eagle_like(draw, depth: int = 4, low: int = 2, high: int = 4) -> tuple[int, ...]:
    parents: list[int] = []
    level = [-1]
    for _ in range(depth):
        grown = []
        for node in level[:draw(st.integers(1, min(2, len(level))))]:
            for _ in range(draw(st.integers(low, high))):
                parents.append(node)
                grown.append(len(parents) - 1)
        level = grown
    return tuple(parents)


@st.composite
def random_shapes(draw, max_nodes: int = 10, max_depth: int = 4) -> tuple[int, ...]:
    parents: list[int] = []
    for _ in range(draw(st.integers(1, max_nodes))):
        below = depths(parents) if parents else []
        options = [-1] + [j for j, d in enumerate(below) if d < max_depth]
        parents.append(draw(st.sampled_from(options)))
    return tuple(parents)


SHAPES = {"chain": chains(), "star": stars(), "eagle": eagle_like(), "random": random_shapes()}


def widest(parents) -> int:
    """The most children any node has."""
    return max((len(c) for c in children(parents).values()), default=0)


@st.composite
def tree_cases(draw, kind: str, mode: str) -> TreeCase:
    """A case of shape ``kind`` and draft ``mode`` (module docstring)."""
    parents = draw(SHAPES[kind])
    if mode == "listed":
        vocab = draw(st.integers(max(2, widest(parents) + 1), max(2, widest(parents) + 3)))
    else:
        vocab = draw(st.integers(2, MAX_DRAWN_VOCAB if kind != "random" else 4))
    seed = draw(st.integers(0, 2**32 - 1))
    mix = draw(st.sampled_from(KIND_MIXES))
    model = build_model(vocab, int(depths(parents).max()), seed, mix)
    tokens = None
    if mode == "listed":
        tokens = listed_tokens(model, parents, draw(st.sampled_from(LISTED_CHOICES)), seed + 1)
    name = f"{kind}, {mode}, N = {len(parents)}, V = {vocab}, {'+'.join(mix)}"
    return TreeCase(name, parents, model, tokens)


def cases(seed: int, kind: str, mode: str, count: int) -> list[TreeCase]:
    """``count`` cases of a kind and mode, a function of ``seed`` alone (Hypothesis's first,
    simplest example set aside)."""
    found: list[TreeCase] = []

    @hypothesis_seed(seed)
    @settings(max_examples=count + 1, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(case=tree_cases(kind, mode))
    def one(case):
        found.append(case)

    examples(one)
    return found[1:count + 1]
