"""Family ``rejection``'s records and verdicts of its fit tests: one observed table against its
exact law (the test itself is ``sampling_harness.stats.fit.law_fit``).

Model: ``draws`` independent outcomes of one request (or one slot), each a cell of a table
with exact float64 law ``law``: an observed cell of law exactly 0 is a certain failure (no
alpha); the possible cells take a Pearson chi-square on pooled bins, optionally at most
``max_bins`` equal-mass ones, whose minimum detectable effect is the worst-case total
variation on those bins (harness/stats/fit.py).
"""

from __future__ import annotations

import numpy as np

from sampling_harness.report.plots import counts_plot, pop_plot
from sampling_harness.stats.fit import law_fit
from sampling_harness.stats.multiple import adjusted_p
from sampling_harness.verdict import Outcome


def law_test(name: str, counts: np.ndarray, law: np.ndarray, alpha: float, power: float,
             max_bins: int | None = None) -> dict:
    """Test one table of counts against its law (``law_fit``); a result record with its
    p-value, and the cell farthest from its expectation."""
    counts, law = np.ravel(counts), np.ravel(law)
    fit = law_fit(counts, law, alpha, power, max_bins)
    worst = _worst_cell(counts, law, fit.draws)
    return {"name": name, "draws": fit.draws, "df": fit.df, "statistic": fit.statistic,
            "p_value": fit.p_value, "impossible": fit.impossible,
            "min_detectable_tv": fit.min_detectable_tv, **worst,
            "plot": counts_plot(name, counts, law, fit.labels, fit.p_value, fit.statistic,
                                fit.df, "cell")}


def _worst_cell(counts: np.ndarray, law: np.ndarray, draws: int) -> dict:
    """The cell farthest from its expectation in standard deviations (for messages)."""
    expected = law * draws
    z = np.where(expected > 0, (counts - expected) / np.sqrt(np.maximum(expected, 1e-300)),
                 np.where(counts > 0, np.inf, 0.0))
    cell = int(np.argmax(np.abs(z)))
    return {"worst_cell": cell, "worst_observed": int(counts[cell]),
            "worst_expected": float(expected[cell])}


def outcome(ctx, results: list[dict], alpha: float, effect: str, samples: int,
            mde: float | None = None, describe=None) -> Outcome:
    """The check's verdict from its per-law results (each tested at ``alpha``)."""
    plot = pop_plot(results)
    failed = [r for r in results if r["p_value"] <= alpha]
    worst = min(results, key=lambda r: r["p_value"])
    describe = describe or (lambda r: f"cell {r['worst_cell']}")
    if failed:
        what = (f"{worst['impossible']} draws in cells of probability 0"
                if worst["impossible"] else
                f"chi2 = {worst['statistic']:.1f} on {worst['df']} df, "
                f"p = {worst['p_value']:.2g}")
        message = (f"{len(failed)} of {len(results)} laws reject; worst: {worst['name']}: "
                   f"{what}; {describe(worst)} observed {worst['worst_observed']} times, "
                   f"expected {worst['worst_expected']:.1f}")
    else:
        message = (f"{len(results)} laws fit; smallest p = {worst['p_value']:.2g} "
                   f"({worst['name']})")
    return Outcome(not failed, message, statistic=worst["statistic"],
                   p_value=adjusted_p([r["p_value"] for r in results]), alpha=ctx.alpha,
                   samples=samples,
                   min_detectable_effect=mde if mde is not None else
                   max(r["min_detectable_tv"] for r in results),
                   effect=effect, details={"tests": results, "alpha_per_test": alpha,
                                           "plot": plot})
