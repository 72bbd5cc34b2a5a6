"""Goodness of fit of family ``sample-logits``: each row against its processed law.

Every row is tested by lawtest.py's three tests (coarse and fine chi-square over the surely
kept tokens, an exact bound on the ambiguous ones) against the float64 reference of the
processed distribution: temperature, top-k with ties kept, top-p on the renormalised top-k
set. The draws per row are planned so that the coarse test detects a total variation of
the budget's ``fit_tv`` (``large_tv`` for the GPU's V = 151936 rows) with power
``budget.power``. Alpha: the check's share, split (Bonferroni) over its tests.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from sampling_harness.families import accepts
from sampling_harness.report.plots import pop_plot
from sampling_harness.stats.chisquare import planned_samples
from sampling_harness.stats.multiple import adjusted_p, bonferroni
from sampling_harness.strategies.logits import sampling_tables
from sampling_harness.strategies.seeded import examples
from sampling_harness.suites.sample_logits.draws import count_tokens, demand_possible
from sampling_harness.suites.sample_logits.lawtest import TESTS_PER_ROW, fit_row, summary
from sampling_harness.suites.sample_logits.rows import Rows, curated, large_vocab
from sampling_harness.verdict import Outcome

GENERATED_ROWS = 3


def fit_rows(ctx, rows: Rows, tv: float, alpha: float) -> list[dict]:
    """Sample every row of ``rows`` and test each against its law. Row r's planned draws
    are divided by 1 - a_r (at most 10x), a_r the most mass its ambiguous tokens may take,
    so that the draws landing in its surely kept set reach the plan. Each row has its own
    count: one row's ambiguous tokens do not multiply its batch-mates' draws, and a row
    with no surely kept token (every kept token ambiguous: its chi-square tests have no
    cell) takes the plan alone."""
    law, budget = rows.law, ctx.budget
    planned = planned_samples(list(law.certain), tv, alpha, budget.power, budget.fit_max_bins)

    def draws(r: int) -> int:
        if not (law.certain[r] > 0).any():
            return planned
        return math.ceil(planned / max(1.0 - float(law.inclusive[r][law.ambiguous[r]].sum()),
                                       0.1))

    counts = count_tokens(ctx, rows, [draws(r) for r in range(rows.kinds)])
    demand_possible(rows, counts)
    results = []
    for r, name in enumerate(rows.names):
        results += fit_row(name, counts[r], law.certain[r], law.inclusive[r],
                           law.ambiguous[r], alpha, budget.power, budget.fit_max_bins)
    return results


def outcome(ctx, results: list[dict], alpha: float, tv: float) -> Outcome:
    plot = pop_plot(results)
    passed, message, worst = summary(results, alpha)
    coarse = [r for r in results if r["test"] == "coarse"]
    return Outcome(passed, message, statistic=worst["statistic"],
                   p_value=adjusted_p([r["p_value"] for r in results]), alpha=ctx.alpha,
                   samples=sum(r["draws"] for r in coarse),
                   min_detectable_effect=max(r["min_detectable_tv"] for r in coarse),
                   effect=f"total variation over the surely kept tokens, on <= "
                          f"{ctx.budget.fit_max_bins} equal-mass bins (target {tv:g})",
                   details={"tests": results, "alpha_per_test": alpha, "plot": plot})


def fit_curated(ctx) -> Outcome:
    tables = curated(ctx.budget.fit_vocab, ctx.seed)
    alpha = bonferroni(ctx.alpha, TESTS_PER_ROW * sum(t.kinds for t in tables))
    results = [r for rows in tables for r in fit_rows(ctx, rows, ctx.budget.fit_tv, alpha)]
    return outcome(ctx, results, alpha, ctx.budget.fit_tv)


def fit_generated(ctx) -> Outcome:
    """Hypothesis draws the rows (seeded by the check's seed, so a run is repeatable); their
    min-p is dropped for a kernel that takes no ``min_p`` (the draws stay the same)."""
    budget = ctx.budget
    min_p = accepts(ctx.runner.kernel.fn, "min_p")
    alpha = bonferroni(ctx.alpha, TESTS_PER_ROW * GENERATED_ROWS * budget.generated_batches)
    results: list[dict] = []

    @hypothesis_seed(ctx.seed)
    @settings(max_examples=budget.generated_batches, phases=[Phase.generate], database=None,
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(table=sampling_tables(budget.generated_max_vocab, GENERATED_ROWS))
    def one_batch(table):
        batch = len(results) // (TESTS_PER_ROW * GENERATED_ROWS)
        rows = Rows(tuple(f"generated-{batch}.{i}" for i in range(GENERATED_ROWS)),
                    table["logits"], table["temperature"], table["top_k"], table["top_p"],
                    table["dtype"], table["min_p"] if min_p else None)
        results.extend(fit_rows(ctx, rows, budget.fit_tv, alpha))

    examples(one_batch)
    result = outcome(ctx, results, alpha, budget.fit_tv)
    if not min_p:
        result.message += "; min-p skipped: the kernel takes no min_p"
    return result


def fit_large_vocab(ctx) -> Outcome:
    rows = large_vocab(ctx.budget.large_vocab, ctx.seed)
    alpha = bonferroni(ctx.alpha, TESTS_PER_ROW * rows.kinds)
    results = fit_rows(ctx, rows, ctx.budget.large_tv, alpha)
    return outcome(ctx, results, alpha, ctx.budget.large_tv)
