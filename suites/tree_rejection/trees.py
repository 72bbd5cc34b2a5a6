"""Hypothesis strategies for family ``tree-rejection``: trees and cases from small named pieces.

A shape is its parent tuple (parents first, siblings in draft order):

* ``chains``: one child per node, depth 1 .. 5 (the chain family's case);
* ``stars``: 2 .. 8 children of the root (multi-draft verification of one position;
  one child is a chain);
* ``eagle_like``: depth 4, the root and then the first one or two nodes of each level (a
  dynamic tree keeps expanding its best candidates) expanding into 2 .. 4 children;
* ``random_shapes``: up to 10 nodes, each under the root or under any earlier node of
  depth < 4;
* ``wide``: a root with more children than a Triton program holds in registers (HELD + 1
  or HELD + 2: triton-tree-rejection then masks them by its loop over every node slot), the
  first with 0 or 1 child of its own (validity's sweep puts such a node deeper); listed
  only (drawn children are never masked, and a drawn star is ``star``'s case);
* ``emptied``: a random shape of up to 6 nodes, depth <= 3, over a model whose residuals
  come out empty where the last token is drawn after rejections (models.py ``emptied``:
  the re-draw from p / sum p runs at about a quarter of the nodes walked through).

A case adds a draft mode (listed children, chosen from the model by a named rule, or drawn
children, redrawn on every call: siblings then repeat), a vocabulary (listed: more tokens
than the widest node has children, and for ``wide`` 3Q + 1 .. 4Q with Q = 16, so that a
chunk's four quarters all hold tokens and the children, dealt over them or drawn at
random, fall in each; drawn: 2 .. 5, so that the exact law, enumerated over every path,
stays small) and a model (a seed and a mix of row kinds). Hypothesis's first example is
its simplest one; ``cases`` sets it aside.
"""

from __future__ import annotations

from hypothesis import strategies as st

from sampling_harness.reference.tree_rejection import children, depths
from sampling_harness.strategies.seeded import each_example
from sampling_harness.suites.tree_rejection.batches import TreeCase
from sampling_harness.suites.tree_rejection.models import (
    KINDS,
    LISTED_CHOICES,
    MIN_QUARTER,
    build_model,
    emptied,
    listed_tokens,
)

SHAPE_KINDS = ("chain", "star", "eagle", "random", "wide", "emptied")
MODES = ("listed", "drawn")
MODES_OF = {**{kind: MODES for kind in SHAPE_KINDS}, "wide": ("listed",)}
KIND_MIXES = (("typical",), ("weak-draft",), ("typical", "weak-draft"), KINDS)
MAX_DRAWN_VOCAB = 5
HELD = 16                 # children a Triton program holds (triton-tree-rejection KIDS)
WIDE_CHOICES = ("every quarter", "random distinct", "draft top-k")


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


@st.composite
def wide(draw, low: int = HELD + 1, high: int = HELD + 2) -> tuple[int, ...]:
    return (-1,) * draw(st.integers(low, high)) + (0,) * draw(st.integers(0, 1))


SHAPES = {"chain": chains(), "star": stars(), "eagle": eagle_like(), "random": random_shapes(),
          "wide": wide(), "emptied": random_shapes(max_nodes=6, max_depth=3)}


def widest(parents) -> int:
    """The most children any node has."""
    return max((len(c) for c in children(parents).values()), default=0)


@st.composite
def tree_cases(draw, kind: str, mode: str) -> TreeCase:
    """A case of shape ``kind`` and draft ``mode`` (module docstring)."""
    parents = draw(SHAPES[kind])
    if mode == "listed" and kind == "wide":
        vocab = draw(st.integers(3 * MIN_QUARTER + 1, 4 * MIN_QUARTER))
    elif mode == "listed":
        vocab = draw(st.integers(max(2, widest(parents) + 1), max(2, widest(parents) + 3)))
    else:
        vocab = draw(st.integers(2, 4 if kind in ("random", "emptied") else MAX_DRAWN_VOCAB))
    seed = draw(st.integers(0, 2**32 - 1))
    mix = draw(st.sampled_from(KIND_MIXES))
    model = build_model(vocab, int(depths(parents).max()), seed, mix)
    tokens = None
    if mode == "listed":
        choices = WIDE_CHOICES if kind == "wide" else LISTED_CHOICES
        tokens = listed_tokens(model, parents, draw(st.sampled_from(choices)), seed + 1)
    if kind == "emptied":
        model = emptied(model, parents, tokens, seed + 2)
    name = f"{kind}, {mode}, N = {len(parents)}, V = {vocab}, {'+'.join(mix)}"
    return TreeCase(name, parents, model, tokens)


def cases(seed: int, kind: str, mode: str, count: int) -> list[TreeCase]:
    """``count`` cases of a kind and mode, a function of ``seed`` alone (Hypothesis's first,
    simplest example set aside)."""
    found: list[TreeCase] = []

    def one(case):
        found.append(case)

    each_example(seed, count + 1, tree_cases(kind, mode), one)
    return found[1:count + 1]
