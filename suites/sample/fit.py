"""Goodness of fit of family ``sample``: each row against its own exact distribution.

Distributions are interleaved row by row in every call (see draws.py). For each
distribution two Pearson chi-square tests run on the same counts:

* coarse: tokens pooled into at most ``budget.fit_max_bins`` bins of about equal expected
  count. Its sample size is planned so that any deviation of total variation
  ``budget.fit_tv`` on those bins is detected with power ``budget.power`` (worst case over
  deviation shapes, see harness/stats/fit.py); that is the check's stated effect.
* fine: every token its own bin unless it expects fewer than 5 draws (then pooled), which
  sees a few wrong tokens that the coarse bins would average away.

Alpha: the check's share, split (Bonferroni) over 2 tests per distribution.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.fits import coarse_fit_verdict
from sampling_harness.reference.categorical import exact_probs
from sampling_harness.report.plots import counts_plot
from sampling_harness.stats.chisquare import planned_samples
from sampling_harness.stats.fit import coarse_and_fine
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.strategies import probs_tables
from sampling_harness.strategies.seeded import each_example
from sampling_harness.suites.sample.distributions import curated, large_vocab
from sampling_harness.suites.sample.draws import count_tokens
from sampling_harness.verdict import Outcome

TESTS_PER_ROW = 2
GENERATED_ROWS = 3


def fit_table(ctx, names: list[str], table: np.ndarray, tv: float, alpha: float) -> list[dict]:
    """Sample every row of ``table`` and test each; one result per (row, test)."""
    probs = exact_probs(torch.as_tensor(table))
    draws = planned_samples(probs, tv, alpha, ctx.budget.power, ctx.budget.fit_max_bins)
    counts = count_tokens(ctx, table, draws)
    results = []
    for name, p, c in zip(names, probs, counts, strict=True):
        fits = coarse_and_fine(c, p, alpha, ctx.budget.power, ctx.budget.fit_max_bins)
        for test, fit in fits.items():
            results.append({"row": name, "test": test, "vocab": int(p.size), "draws": draws,
                            "df": fit.df, "statistic": fit.statistic, "p_value": fit.p_value,
                            "min_detectable_tv": fit.min_detectable_tv,
                            "plot": counts_plot(f"row {name!r}, {test} test", c, p, fit.labels,
                                                fit.p_value, fit.statistic, fit.df)})
    return results


def summarise(ctx, results: list[dict], alpha: float, tv: float) -> Outcome:
    """The check's verdict from its (row, test) records (each at ``alpha``); its effect is
    the coarse tests' total variation."""

    def message(failed: list[dict], worst: dict) -> str:
        if failed:
            return (f"{len(failed)} of {len(results)} tests reject; worst: row "
                    f"{worst['row']!r} (V={worst['vocab']}) {worst['test']} chi2 = "
                    f"{worst['statistic']:.1f} on {worst['df']} df, "
                    f"p = {worst['p_value']:.2g}")
        return (f"{len({r['row'] for r in results})} distributions fit; smallest p = "
                f"{worst['p_value']:.2g} ({worst['row']}, {worst['test']})")

    return coarse_fit_verdict(ctx, results, alpha, message,
                              effect=f"total variation on <= {ctx.budget.fit_max_bins} "
                                     f"equal-mass bins (target {tv:g})")


def fit_curated(ctx) -> Outcome:
    rows = curated(ctx.budget.fit_vocab, ctx.seed)
    alpha = bonferroni(ctx.alpha, TESTS_PER_ROW * len(rows))
    table = np.stack(list(rows.values()))
    results = fit_table(ctx, list(rows), table, ctx.budget.fit_tv, alpha)
    return summarise(ctx, results, alpha, ctx.budget.fit_tv)


def fit_generated(ctx) -> Outcome:
    """Hypothesis draws the batches (seeded by the check's seed, so a run is repeatable)."""
    budget = ctx.budget
    alpha = bonferroni(ctx.alpha, TESTS_PER_ROW * GENERATED_ROWS * budget.generated_batches)
    results: list[dict] = []

    def one_batch(table):
        batch = len(results) // (TESTS_PER_ROW * GENERATED_ROWS)
        names = [f"generated-{batch}.{i}" for i in range(GENERATED_ROWS)]
        results.extend(fit_table(ctx, names, table, budget.fit_tv, alpha))

    each_example(ctx.seed, budget.generated_batches,
                 probs_tables(budget.generated_max_vocab, GENERATED_ROWS), one_batch)
    return summarise(ctx, results, alpha, budget.fit_tv)


def fit_large_vocab(ctx) -> Outcome:
    rows = large_vocab(ctx.budget.large_vocab, ctx.seed)
    alpha = bonferroni(ctx.alpha, TESTS_PER_ROW * len(rows))
    results = fit_table(ctx, list(rows), np.stack(list(rows.values())),
                        ctx.budget.large_tv, alpha)
    return summarise(ctx, results, alpha, ctx.budget.large_tv)
