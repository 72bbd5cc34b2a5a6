"""The law of the returned sequence, family ``tree-rejection``: per tree shape and draft mode.

For every shape kind (chain, star of up to 8, EAGLE-like depth 4, random, wide: a root of
17 or 18 listed children spread over a chunk's four quarters, emptied: residuals that come
out empty; trees.py) and draft mode (listed children, fixed; drawn children, redrawn on
every call; ``wide`` listed only, from quick up: its slot loop costs the interpreter 2 s,
and validity's quarter sweeps reach it at every budget), Hypothesis draws
``budget.trees_per_shape`` cases; each case's returned sequences are tallied over every
path of lengths 1 .. D + 1 and tested against the exact law (reference/tree_rejection.py
``sequence_law``: lossless, the target model's law of the sequence, with the stopping rule
of the tree) by the chain family's fit test (harness/checks/fits.py: Pearson
chi-square on cells pooled to expect >= 5, a draw in a cell of probability 0 an exact
failure). Draws per case are planned so that total variation ``budget.law_tv`` on the
pooled cells is detected with ``budget.power``, the worst case over deviation shapes.
Alpha: the check's share over the cases (Bonferroni).

Beside the drawn cases, one curated multi-draft case where the siblings' coins and
residuals matter most: a star of 3 drawn children over V = 3 with p = (0.225, 0.098,
0.677) and q = (0.328, 0.039, 0.633) after every path (found by a search maximising the
chi-square's noncentrality against one coin shared by siblings, against siblings tested
without the residual update, and thresholds below 1 move it too: total variation 0.04 to
0.06 on its 12 cells).
"""

from __future__ import annotations

import numpy as np

from sampling_harness.checks.fits import law_test, laws_outcome
from sampling_harness.reference.tree_rejection import flat_law, sequence_law
from sampling_harness.seeds import derive_seed
from sampling_harness.stats.chisquare import planned_samples
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.suites.tree_rejection.batches import TreeCase, tally
from sampling_harness.suites.tree_rejection.models import uniform_model
from sampling_harness.suites.tree_rejection.trees import MODES_OF, SHAPE_KINDS, cases

EFFECT = "total variation of the returned sequence's law on its pooled cells"


MULTI_DRAFT_P = np.array([0.225, 0.098, 0.677], np.float32)
MULTI_DRAFT_Q = np.array([0.328, 0.039, 0.633], np.float32)


def multi_draft() -> TreeCase:
    """The curated multi-draft case (module docstring)."""
    model = uniform_model(MULTI_DRAFT_P / MULTI_DRAFT_P.sum(),
                          MULTI_DRAFT_Q / MULTI_DRAFT_Q.sum(), 1)
    return TreeCase("multi-draft star of 3, drawn, V = 3", (-1, -1, -1), model, None)


def law_cases(seed: int, per_shape: int, wide: bool = True) -> list:
    """The curated multi-draft case, then every (shape kind, draft mode) pair's cases, each
    pair's drawn from its own seed (``wide`` False: without the wide kind)."""
    kinds = [kind for kind in SHAPE_KINDS if wide or kind != "wide"]
    return [multi_draft()] + [case for kind in kinds for mode in MODES_OF[kind]
                              for case in cases(derive_seed(seed, kind, mode), kind, mode,
                                                per_shape)]


def describe(record: dict) -> str:
    return f"sequence {record['sequence']}"


def sequence_of(cell: int, vocab: int) -> list[int]:
    """The tokens of cell ``cell`` (``flat_law`` order)."""
    length, start = 1, 0
    while cell >= start + vocab ** length:
        start += vocab ** length
        length += 1
    code, tokens = cell - start, []
    for _ in range(length):
        code, token = divmod(code, vocab)
        tokens.append(token)
    return tokens[::-1]


def law(ctx):
    budget = ctx.budget
    found = law_cases(ctx.seed, budget.trees_per_shape, budget.wide_law)
    alpha = bonferroni(ctx.alpha, len(found))
    results = []
    for case in found:
        exact = flat_law(sequence_law(case.model, case.parents, case.tokens))
        trees = planned_samples([exact], budget.law_tv, alpha, budget.power)
        record = law_test(case.name, tally(ctx, case, trees), exact, alpha, budget.power)
        record["sequence"] = sequence_of(record["worst_cell"], case.vocab)
        results.append(record)
    return laws_outcome(ctx, results, alpha, f"{EFFECT} (target {budget.law_tv:g})",
                        sum(r["draws"] for r in results), describe=describe)
