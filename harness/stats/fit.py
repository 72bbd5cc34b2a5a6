"""Goodness of fit of observed counts to an exact law: the one fit test of every family.

Model: ``n`` independent draws, each a cell ``i`` (a token, an (accepted length, token) pair,
a continuation) of a categorical law ``p`` known exactly in float64; ``O_i`` the count of
cell ``i``. H0: the draws follow ``p``. A fit test is made of these parts, each a small pure
function (a family adds only its records and messages):

* ``chisquare_fit``: Pearson's chi-square on pooled bins (``sampling_harness.stats.
  chisquare``): sparse cells are pooled until every bin expects >= 5 draws (Cochran's rule),
  optionally into at most ``max_bins`` bins of about equal expected count;
* ``coarse_and_fine``: the two chi-squares a family runs on one law. *Coarse*: at most
  ``max_bins`` equal-mass bins; its sample size is planned (``chisquare.planned_samples``)
  and its minimum detectable effect is the one a check states. *Fine*: every cell its own
  bin unless it expects fewer than 5 draws; it sees a few wrong cells that the coarse bins
  would average away;
* ``law_fit``: a chi-square plus the exact part of the law: a draw in a cell of probability
  exactly 0 cannot happen under H0, so any such draw makes ``p = 0`` (no alpha spent);
* ``excess_p``: the exact tail of a set of cells whose mass is only bounded, ``a <= a_max``
  (tokens a float32 kernel may keep or drop): its count is Binomial(n, a), tested one-sided
  at ``a_max`` by the exact binomial tail.

Error rates. False fail (a correct kernel rejected at level ``alpha``): the chi-square is
asymptotic, ``X^2 ~ chi^2(k - 1)`` over ``k`` bins, trusted at >= 5 expected draws per bin
(its rate is then ``alpha`` up to the approximation); the impossible-cell part never fails a
correct kernel; ``excess_p`` is exact and conservative (rate <= ``alpha`` for every true
``a <= a_max``, the binomial tail being increasing in the rate). Missed fail: for every
alternative at total variation ``tv`` from ``p`` on the bins, the chi-square detects it with
probability ``power`` once ``tv >= min_detectable_tv`` (worst case over deviation shapes:
the noncentrality is at least ``4 n tv^2``, ``chisquare.min_detectable_tv``). A deviation
inside one bin is invisible to the coarse test, hence the fine one. Several tests of one check
share its alpha by Bonferroni (``sampling_harness.stats.multiple``).

Assumptions: the draws are independent (``sampling_harness.stats.independence`` tests it
separately) and ``p`` is the exact law of every one of them; the expected counts are scaled
to the draws that fell on the support, so draws on zero-probability cells do not also
distort the chi-square.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sampling_harness.stats.binomial import upper_p
from sampling_harness.stats.chisquare import chisquare_gof, min_detectable_tv, pool_bins

COARSE, FINE = "coarse", "fine"


@dataclass(frozen=True, eq=False)
class Fit:
    """One chi-square fit: the ``draws`` tested, the bin ``labels`` per cell (-1: probability
    0), Pearson's ``statistic`` on ``df`` degrees of freedom and its ``p_value``, the
    ``min_detectable_tv`` at the test's level and power, and the ``impossible`` draws (cells
    of probability 0: ``law_fit`` only, which then gives ``p_value = 0``)."""

    draws: int
    labels: np.ndarray
    statistic: float
    df: int
    p_value: float
    min_detectable_tv: float
    impossible: int = 0


def chisquare_fit(counts: np.ndarray, probs: np.ndarray, alpha: float, power: float,
                  max_bins: int | None = None) -> Fit:
    """Pearson chi-square of ``counts`` against ``probs`` on pooled bins.

    ``n = sum(counts)``; the bins are ``pool_bins(n p, max_bins)``: every bin expects >= 5
    draws, at most ``max_bins`` of about equal expected count (``None``: as many as that
    allows). Returns the statistic ``sum_b (O_b - E_b)^2 / E_b`` on ``k - 1`` df and its
    asymptotic p-value (one bin or none: 0 on 0 df, p = 1: no evidence either way), and the
    smallest total variation on the bins detected with ``power`` at level ``alpha``,
    ``sqrt(lambda / n) / 2`` on at least 1 df (with no draws, that of one draw: above 1, so
    nothing is detectable).
    """
    draws = int(counts.sum())
    labels = pool_bins(draws * probs, max_bins=max_bins)
    statistic, df, p_value = chisquare_gof(counts, probs, labels)
    mde = min_detectable_tv(max(draws, 1), max(df, 1), alpha, power)
    return Fit(draws, labels, statistic, df, p_value, mde)


def coarse_and_fine(counts: np.ndarray, probs: np.ndarray, alpha: float, power: float,
                    max_bins: int | None) -> dict[str, Fit]:
    """``{"coarse": ..., "fine": ...}``: ``chisquare_fit`` on at most ``max_bins`` equal-mass
    bins (the planned test, its effect the stated one) and on every cell that expects >= 5
    draws (sparse ones pooled). Each is a test at ``alpha``: a check counts two tests per law
    in its Bonferroni split."""
    return {COARSE: chisquare_fit(counts, probs, alpha, power, max_bins),
            FINE: chisquare_fit(counts, probs, alpha, power, None)}


def impossible_draws(counts: np.ndarray, probs: np.ndarray) -> int:
    """Draws in cells of probability exactly 0: impossible under H0, whatever ``n``."""
    return int(counts[probs <= 0].sum())


def law_fit(counts: np.ndarray, law: np.ndarray, alpha: float, power: float,
            max_bins: int | None = None) -> Fit:
    """``chisquare_fit`` of a whole table of counts (any shape, flattened) against its exact
    ``law``, with its exact part: any draw in a cell of law 0 makes ``p_value = 0`` (a certain
    failure: its false-fail rate is 0). With no draws the minimum detectable effect is 1."""
    counts, law = np.ravel(counts), np.ravel(law)
    fit = chisquare_fit(counts, law, alpha, power, max_bins)
    impossible = impossible_draws(counts, law)
    return Fit(fit.draws, fit.labels, fit.statistic, fit.df,
               0.0 if impossible else fit.p_value,
               fit.min_detectable_tv if fit.draws else 1.0, impossible)


def excess_p(hits: int, draws: int, max_rate: float) -> float:
    """Exact one-sided p-value of ``hits`` events in ``draws`` when each draw is an event with
    an unknown probability ``a <= max_rate``: ``P(X >= hits)``, ``X ~ Binomial(draws,
    min(max_rate, 1))``. Valid for every ``a <= max_rate`` (the tail grows with the rate):
    its false-fail rate is at most ``alpha``; an excess of events over ``max_rate`` fails."""
    return upper_p(hits, draws, min(max_rate, 1.0))
