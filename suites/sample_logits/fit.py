"""Goodness of fit of family ``sample-logits``: each row against its processed law.

Every row is tested against the float64 reference of the processed distribution:
temperature, top-k with ties kept, top-p on the renormalised top-k set. The tests are valid
whatever the ambiguous tokens do. Let C be the surely kept tokens of a row, A the ambiguous
ones (reference/processed.py) and a_max the mass ``inclusive`` gives A (the most a kernel
that keeps every ambiguous token can put there). Whatever subset of A a kernel keeps:

* conditional on landing in C, a draw has law ``certain`` (softmax over C) exactly; given
  n_C draws in C, the counts over C are Multinomial(n_C, certain). Two Pearson chi-square
  tests run on them (harness/stats/fit.py ``coarse_and_fine``): coarse (at most
  ``max_bins`` equal-mass bins, the stated effect) and fine (every token its own bin unless
  it expects fewer than 5 draws);
* the count of draws in A is Binomial(n, a) with a <= a_max; a one-sided exact test for an
  excess over a_max (``excess_p``; skipped, p = 1, when A is empty);
* a token outside C and A is never drawn (``demand_possible``).

Three tests per row, each at ``alpha``; the effect is the coarse test's total variation on
its bins at the planned n (with n_C >= n (1 - a_max) in C: a_max is reported). The draws per
row are planned so that the coarse test detects a total variation of the budget's
``fit_tv`` (``large_tv`` for the GPU's V = 151936 rows) with power ``budget.power``. Alpha:
the check's share, split (Bonferroni) over its tests.
"""

from __future__ import annotations

import math

import numpy as np

from sampling_harness.checks.fits import coarse_fit_verdict
from sampling_harness.families import accepts
from sampling_harness.report.plots import counts_plot
from sampling_harness.stats.chisquare import planned_samples
from sampling_harness.stats.fit import coarse_and_fine, excess_p
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.strategies.logits import sampling_tables
from sampling_harness.strategies.seeded import each_example
from sampling_harness.suites.sample_logits.draws import count_tokens, demand_possible
from sampling_harness.suites.sample_logits.rows import Rows, curated, large_vocab
from sampling_harness.verdict import Outcome

TESTS_PER_ROW = 3
GENERATED_ROWS = 3


def fit_row(name: str, counts: np.ndarray, certain: np.ndarray, inclusive: np.ndarray,
            ambiguous: np.ndarray, alpha: float, power: float, max_bins: int) -> list[dict]:
    """The three tests of one row: a result dict each (p_value, statistic, df, draws...)."""
    draws = int(counts.sum())
    in_c = certain > 0
    n_c = int(counts[in_c].sum())
    a_max = float(inclusive[ambiguous].sum())
    k_a = int(counts[ambiguous].sum())
    base = {"row": name, "vocab": int(counts.size), "draws": draws, "in_certain": n_c,
            "kept_certain": int(in_c.sum()), "ambiguous_tokens": int(ambiguous.sum()),
            "ambiguous_max_mass": a_max, "ambiguous_draws": k_a}
    results = []
    p = certain[in_c]
    for test, fit in coarse_and_fine(counts[in_c], p, alpha, power, max_bins).items():
        results.append({**base, "test": test, "df": fit.df, "statistic": fit.statistic,
                        "p_value": fit.p_value, "min_detectable_tv": fit.min_detectable_tv,
                        "plot": counts_plot(f"row {name!r}, {test} test (surely kept tokens)",
                                            counts[in_c], p, fit.labels, fit.p_value,
                                            fit.statistic, fit.df, ids=np.flatnonzero(in_c))})
    p_amb = excess_p(k_a, draws, a_max) if ambiguous.any() else 1.0
    results.append({**base, "test": "ambiguous excess", "df": 0, "statistic": float(k_a),
                    "p_value": p_amb, "min_detectable_tv": 0.0})
    return results


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
    """The check's verdict from its per-row tests (each at ``alpha``); its effect is the
    coarse tests' total variation."""

    def message(failed: list[dict], worst: dict) -> str:
        if failed:
            return (f"{len(failed)} of {len(results)} tests reject; worst: row "
                    f"{worst['row']!r} (V={worst['vocab']}) {worst['test']}: statistic "
                    f"{worst['statistic']:.1f} on {worst['df']} df, "
                    f"p = {worst['p_value']:.2g}")
        rows = len({r["row"] for r in results})
        ambiguous = sum(r["ambiguous_tokens"] for r in results if r["test"] == "coarse")
        return (f"{rows} processed rows fit ({ambiguous} ambiguous tokens accepted either "
                f"way); smallest p = {worst['p_value']:.2g} ({worst['row']}, {worst['test']})")

    return coarse_fit_verdict(ctx, results, alpha, message,
                              effect=f"total variation over the surely kept tokens, on <= "
                                     f"{ctx.budget.fit_max_bins} equal-mass bins (target {tv:g})")


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

    def one_batch(table):
        batch = len(results) // (TESTS_PER_ROW * GENERATED_ROWS)
        rows = Rows(tuple(f"generated-{batch}.{i}" for i in range(GENERATED_ROWS)),
                    table["logits"], table["temperature"], table["top_k"], table["top_p"],
                    table["dtype"], table["min_p"] if min_p else None)
        results.extend(fit_rows(ctx, rows, budget.fit_tv, alpha))

    each_example(ctx.seed, budget.generated_batches,
                 sampling_tables(budget.generated_max_vocab, GENERATED_ROWS), one_batch)
    result = outcome(ctx, results, alpha, budget.fit_tv)
    if not min_p:
        result.message += "; min-p skipped: the kernel takes no min_p"
    return result


def fit_large_vocab(ctx) -> Outcome:
    rows = large_vocab(ctx.budget.large_vocab, ctx.seed)
    alpha = bonferroni(ctx.alpha, TESTS_PER_ROW * rows.kinds)
    results = fit_rows(ctx, rows, ctx.budget.large_tv, alpha)
    return outcome(ctx, results, alpha, ctx.budget.large_tv)
