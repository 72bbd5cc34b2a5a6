"""Goodness-of-fit verdicts shared by the families' fit, law and acceptance checks.

``fit_verdict``: a check runs m tests (one per row, law or run; harness/stats/fit.py), each
at the Bonferroni share ``alpha`` = (check's alpha) / m. It fails where some test has
p <= alpha; its statistic is the worst test's (smallest p), its p-value the Bonferroni-
adjusted min(1, m min p) (harness/stats/multiple.py ``adjusted_p``), and the plot kept is
the worst test's.

``law_test`` and ``laws_outcome``: one table of counts against its exact law, the model of
the chain and tree rejection checks. ``draws`` independent outcomes, each a cell of a table
with exact float64 law ``law``: an observed cell of law exactly 0 is a certain failure (no
alpha); the possible cells take a Pearson chi-square on pooled bins, optionally at most
``max_bins`` equal-mass ones, whose minimum detectable effect is the worst-case total
variation on those bins (``sampling_harness.stats.fit.law_fit``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sampling_harness.report.plots import counts_plot, pop_plot
from sampling_harness.stats.fit import law_fit
from sampling_harness.stats.multiple import adjusted_p
from sampling_harness.verdict import Outcome


def fit_verdict(ctx, results: list[dict], alpha: float,
                message: Callable[[list[dict], dict], str], *, samples: int,
                min_detectable_effect: float, effect: str, key: str = "tests") -> Outcome:
    """The verdict of ``results`` (records with ``p_value``, ``statistic`` and an optional
    ``plot``), each test at ``alpha``. ``message(failed, worst)`` words it: ``failed`` the
    records with p <= alpha, ``worst`` the one of smallest p. The records go to the details
    under ``key``, their plots removed (the worst one's kept)."""
    plot = pop_plot(results)
    failed = [r for r in results if r["p_value"] <= alpha]
    worst = min(results, key=lambda r: r["p_value"])
    return Outcome(not failed, message(failed, worst), statistic=worst["statistic"],
                   p_value=adjusted_p([r["p_value"] for r in results]), alpha=ctx.alpha,
                   samples=samples, min_detectable_effect=min_detectable_effect,
                   effect=effect, details={key: results, "alpha_per_test": alpha,
                                           "plot": plot})


def coarse_fit_verdict(ctx, results: list[dict], alpha: float,
                       message: Callable[[list[dict], dict], str], effect: str) -> Outcome:
    """``fit_verdict`` of per-row fits that each run a ``coarse`` test (equal-mass bins) beside
    finer ones: the samples are the coarse tests' draws, the minimum detectable effect the
    largest total variation a coarse test detects."""
    coarse = [r for r in results if r["test"] == "coarse"]
    return fit_verdict(ctx, results, alpha, message,
                       samples=sum(r["draws"] for r in coarse),
                       min_detectable_effect=max(r["min_detectable_tv"] for r in coarse),
                       effect=effect)


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


def laws_outcome(ctx, results: list[dict], alpha: float, effect: str, samples: int,
                 mde: float | None = None, describe=None) -> Outcome:
    """The check's verdict from its ``law_test`` records (each tested at ``alpha``); ``mde``
    defaults to the largest of the tests' detectable total variations; ``describe(record)``
    names the worst cell in the message."""
    describe = describe or (lambda r: f"cell {r['worst_cell']}")

    def message(failed: list[dict], worst: dict) -> str:
        if not failed:
            return (f"{len(results)} laws fit; smallest p = {worst['p_value']:.2g} "
                    f"({worst['name']})")
        what = (f"{worst['impossible']} draws in cells of probability 0"
                if worst["impossible"] else
                f"chi2 = {worst['statistic']:.1f} on {worst['df']} df, "
                f"p = {worst['p_value']:.2g}")
        return (f"{len(failed)} of {len(results)} laws reject; worst: {worst['name']}: "
                f"{what}; {describe(worst)} observed {worst['worst_observed']} times, "
                f"expected {worst['worst_expected']:.1f}")

    return fit_verdict(ctx, results, alpha, message, samples=samples,
                       min_detectable_effect=mde if mde is not None else
                       max(r["min_detectable_tv"] for r in results), effect=effect)
