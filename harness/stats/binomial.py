"""Exact binomial tests for counts of events: rare-token wins, agreements, forbidden draws.

Model: ``k`` events in ``n`` independent trials, each an event with probability ``p``
under H0. All tests here are exact (no normal approximation): their false-fail rate is at
most ``alpha`` for every ``n`` and ``p``, and lower than ``alpha`` by the discreteness of
the binomial. Power is computed from the same rejection region the test uses, so the
minimum detectable effect is exact too.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats


def equal_tailed_p(k: int, n: int, p: float) -> float:
    """Two-sided p-value, twice the smaller tail: ``min(1, 2 min(P(X <= k), P(X >= k)))``."""
    lower = stats.binom.cdf(k, n, p)
    upper = stats.binom.sf(k - 1, n, p)
    return float(min(1.0, 2.0 * min(lower, upper)))


def upper_p(k: int, n: int, p: float) -> float:
    """One-sided p-value for an excess of events: ``P(X >= k)``."""
    return float(stats.binom.sf(k - 1, n, p))


def clopper_pearson(wins: int, rows: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval of a binomial rate from ``wins`` events
    in ``rows`` trials: ``[B(a/2; k, n - k + 1), B(1 - a/2; k + 1, n - k)]``, ``B(q; a, b)``
    the q-quantile of Beta(a, b) and ``a = 1 - level`` (the lower end 0 at ``k = 0``, the
    upper 1 at ``k = n``; ``(0, 1)`` with no trials). It covers the true rate with
    probability >= ``level`` whatever the rate (each end misses with probability <= a/2)."""
    if rows <= 0:
        return 0.0, 1.0
    tail = (1.0 - level) / 2.0
    low = stats.beta.ppf(tail, wins, rows - wins + 1) if wins > 0 else 0.0
    high = stats.beta.isf(tail, wins + 1, rows - wins) if wins < rows else 1.0
    return float(low), float(high)


def rejection_bounds(n: int, p: float, alpha: float) -> tuple[int, int]:
    """The equal-tailed region at level ``alpha``: reject when ``k <= lo`` or ``k >= hi``."""
    lo = int(stats.binom.ppf(alpha / 2.0, n, p)) - 1
    while stats.binom.cdf(lo + 1, n, p) <= alpha / 2.0:
        lo += 1
    hi = int(stats.binom.isf(alpha / 2.0, n, p)) + 1
    while hi > 0 and stats.binom.sf(hi - 2, n, p) <= alpha / 2.0:
        hi -= 1
    return lo, hi


def min_detectable_deficit(n: int, p: float, alpha: float, power: float) -> float:
    """The smallest relative shortfall ``d`` (true rate ``p (1 - d)``) that the equal-tailed
    test rejects with probability ``power``; 1.0 when even ``d = 1`` (no events) is missed."""
    lo, _ = rejection_bounds(n, p, alpha)
    if lo < 0:
        return 1.0
    caught = lambda d: stats.binom.cdf(lo, n, p * (1.0 - d)) - power
    if caught(1.0 - 1e-12) < 0:
        return 1.0
    if caught(0.0) >= 0:
        return 0.0
    return float(optimize.brentq(caught, 0.0, 1.0 - 1e-12, xtol=1e-6))


def min_detectable_rate(n: int, p: float, alpha: float, power: float) -> float:
    """The smallest event rate ``p' > p`` that the one-sided excess test (reject when
    ``P(X >= k) <= alpha``) detects with probability ``power``."""
    hi = int(stats.binom.isf(alpha, n, p)) + 1
    while hi > 0 and stats.binom.sf(hi - 2, n, p) <= alpha:
        hi -= 1
    caught = lambda q: stats.binom.sf(hi - 1, n, q) - power
    return float(optimize.brentq(caught, p, 1.0, xtol=1e-12, rtol=1e-9))


def never_rate(n: int, power: float) -> float:
    """For an event that must never happen: the smallest per-trial rate at which ``n`` trials
    show at least one event with probability ``power``: ``1 - (1 - power)^(1/n)``."""
    return float(-math.expm1(math.log1p(-power) / n))


def looks_alpha(alpha: float, looks: int) -> float:
    """Level of each look of a group-sequential test that looks ``looks`` times at growing
    data: Bonferroni over the looks keeps the whole test at ``alpha`` (the looks are
    dependent; the union bound needs no model of that dependence)."""
    return alpha / looks


def fraction_schedule(looks: int) -> np.ndarray:
    """Information fractions of the looks: ``2^-(looks-1), ..., 1/4, 1/2, 1``."""
    return np.exp2(-np.arange(looks - 1, -1, -1, dtype=np.float64))
