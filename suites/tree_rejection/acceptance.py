"""Acceptance of family ``tree-rejection``: the accepted length, beside the chain's.

Curated trees over typical laws (each draft accepted about half the time): a star of 8
children and an EAGLE-like tree of depth 4, listed and drawn, and on the very same models
a chain of the same depth. Per tree, the counts of A = 0 .. D accepted tokens are tested
against the exact law (reference/tree_rejection.py ``accepted_length_law`` of
``sequence_law``) by the chain family's fit test (chi-square, sparse cells pooled, an
impossible length an exact failure), with draws planned so that total variation
``budget.length_tv`` of the length law is detected with ``budget.power``; alpha is the
check's share over the trees. That is the verdict: a verifier that accepts too much (a
threshold below 1, siblings tested against the target instead of the residual) or too
little moves A.

Beside it, a figure for users and no verdict: the mean accepted length of each tree with
its 95 % interval (mean +- z sd / sqrt(n)) and its exact value, next to the chain's on the
same laws: what the tree buys.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from sampling_harness.checks.fits import law_test, laws_outcome
from sampling_harness.reference.tree_rejection import (
    accepted_length_law,
    cell_offsets,
    depths,
    mean_accepted,
    sequence_law,
)
from sampling_harness.report.plots import lengths_plot
from sampling_harness.stats.chisquare import planned_samples
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.suites.tree_rejection.batches import TreeCase, tally
from sampling_harness.suites.tree_rejection.models import build_model, listed_tokens

EAGLE = (-1, -1, -1, 0, 0, 0, 1, 1, 3, 3, 4, 8, 8)
TREES = (("star of 8", (-1,) * 8, 24, 5), ("EAGLE-like, depth 4", EAGLE, 6, 4))
LEVEL = 0.95


def chain(depth: int) -> tuple[int, ...]:
    return (-1,) + tuple(range(depth - 1))


def curated(seed: int) -> list[tuple[TreeCase, TreeCase]]:
    """(tree, chain of its depth on the same model) per curated tree and draft mode."""
    pairs = []
    for name, parents, listed_vocab, drawn_vocab in TREES:
        depth = int(depths(parents).max())
        for mode, vocab in (("listed", listed_vocab), ("drawn", drawn_vocab)):
            model = build_model(vocab, depth, seed + vocab, ("typical",))
            line = chain(depth)
            pairs.append((TreeCase(f"{name}, {mode}, V = {vocab}", parents, model,
                                   listed(model, parents, mode, seed)),
                          TreeCase(f"chain of {depth}, {mode}, V = {vocab}", line, model,
                                   listed(model, line, mode, seed))))
    return pairs


def listed(model, parents, mode: str, seed: int):
    """Listed children: the draft's top k at every node (None for drawn children)."""
    return listed_tokens(model, parents, "draft top-k", seed) if mode == "listed" else None


def lengths(counts: np.ndarray, vocab: int, depth: int) -> np.ndarray:
    """Counts of A = 0 .. D from counts over ``flat_law`` cells."""
    offsets = cell_offsets(vocab, depth + 1)
    return np.array([counts[offsets[m]:offsets[m + 1]].sum() for m in range(1, depth + 2)])


def mean_interval(counts: np.ndarray) -> tuple[float, float, float]:
    """(mean, low, high): the mean of A and its normal 95 % interval."""
    values = np.arange(counts.size)
    n = counts.sum()
    mean = float(np.dot(values, counts) / n)
    spread = math.sqrt(float(np.dot((values - mean) ** 2, counts)) / max(n - 1, 1) / n)
    z = float(stats.norm.ppf(0.5 + LEVEL / 2))
    return mean, mean - z * spread, mean + z * spread


def figure(record: dict) -> str:
    low, high = record["interval"]
    return (f"{record['name']}: {record['mean']:.3f} [{low:.3f}, {high:.3f}] "
            f"(exact {record['exact_mean']:.3f})")


def acceptance(ctx):
    budget = ctx.budget
    pairs = curated(ctx.seed)
    alpha = bonferroni(ctx.alpha, 2 * len(pairs))
    results, figures = [], []
    for pair in pairs:
        for case in pair:
            law = sequence_law(case.model, case.parents, case.tokens)
            length_law = accepted_length_law(law)
            trees = planned_samples([length_law], budget.length_tv, alpha, budget.power)
            counts = lengths(tally(ctx, case, trees), case.vocab, case.depth)
            record = law_test(case.name, counts, length_law, alpha, budget.power)
            mean, low, high = mean_interval(counts)
            record.update(mean=mean, interval=[low, high], exact_mean=mean_accepted(law),
                          plot=lengths_plot(f"accepted length of {case.name}", counts,
                                            length_law, record["p_value"]))
            results.append(record)
        figures.append(f"{figure(results[-2])} beside {figure(results[-1])}")
    result = laws_outcome(
        ctx, results, alpha,
        f"total variation of the accepted-length law (target {budget.length_tv:g})",
        sum(r["draws"] for r in results), describe=lambda r: f"A = {r['worst_cell']}")
    result.message += "; mean accepted length, 95 % interval: " + "; ".join(figures)
    result.details["mean_accepted"] = [{k: r[k] for k in ("name", "mean", "interval",
                                                          "exact_mean")} for r in results]
    return result
