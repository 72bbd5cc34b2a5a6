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
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from sampling_harness.reference.categorical import exact_probs
from sampling_harness.report.plots import counts_plot, pop_plot
from sampling_harness.stats.chisquare import planned_samples
from sampling_harness.stats.fit import coarse_and_fine
from sampling_harness.stats.multiple import adjusted_p, bonferroni
from sampling_harness.strategies import probs_tables
from sampling_harness.strategies.seeded import examples
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
    plot = pop_plot(results)
    failed = [r for r in results if r["p_value"] <= alpha]
    worst = min(results, key=lambda r: r["p_value"])
    coarse_mde = max(r["min_detectable_tv"] for r in results if r["test"] == "coarse")
    if failed:
        message = (f"{len(failed)} of {len(results)} tests reject; worst: row "
                   f"{worst['row']!r} (V={worst['vocab']}) {worst['test']} chi2 = "
                   f"{worst['statistic']:.1f} on {worst['df']} df, p = {worst['p_value']:.2g}")
    else:
        message = (f"{len({r['row'] for r in results})} distributions fit; smallest p = "
                   f"{worst['p_value']:.2g} ({worst['row']}, {worst['test']})")
    return Outcome(not failed, message, statistic=worst["statistic"],
                   p_value=adjusted_p([r["p_value"] for r in results]), alpha=ctx.alpha,
                   samples=sum(r["draws"] for r in results if r["test"] == "coarse"),
                   min_detectable_effect=coarse_mde,
                   effect=f"total variation on <= {ctx.budget.fit_max_bins} equal-mass bins "
                          f"(target {tv:g})",
                   details={"tests": results, "alpha_per_test": alpha, "plot": plot})


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

    @hypothesis_seed(ctx.seed)
    @settings(max_examples=budget.generated_batches, phases=[Phase.generate], database=None,
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(table=probs_tables(budget.generated_max_vocab, GENERATED_ROWS))
    def one_batch(table):
        batch = len(results) // (TESTS_PER_ROW * GENERATED_ROWS)
        names = [f"generated-{batch}.{i}" for i in range(GENERATED_ROWS)]
        results.extend(fit_table(ctx, names, table, budget.fit_tv, alpha))

    examples(one_batch)
    return summarise(ctx, results, alpha, budget.fit_tv)


def fit_large_vocab(ctx) -> Outcome:
    rows = large_vocab(ctx.budget.large_vocab, ctx.seed)
    alpha = bonferroni(ctx.alpha, TESTS_PER_ROW * len(rows))
    results = fit_table(ctx, list(rows), np.stack(list(rows.values())),
                        ctx.budget.large_tv, alpha)
    return summarise(ctx, results, alpha, ctx.budget.large_tv)
