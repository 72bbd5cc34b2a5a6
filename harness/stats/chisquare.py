"""Chi-square goodness of fit with pooled sparse bins, and its power.

Model: ``n`` independent draws from a categorical distribution ``p`` over tokens; ``counts``
are the observed token counts. Under H0 (the kernel samples ``p``), the Pearson statistic

    X^2 = sum_b (O_b - E_b)^2 / E_b,     E_b = n * sum_{i in b} p_i,

over ``k`` bins is asymptotically chi^2(k - 1). The approximation is trusted once every
bin expects at least 5 draws (Cochran's rule), so sparse tokens are pooled.

Power: against an alternative ``p'`` the statistic is asymptotically noncentral chi^2 with
noncentrality ``lambda = n * sum_b (p'_b - p_b)^2 / p_b``. By Cauchy-Schwarz,
``sum_b d_b^2 / p_b >= (sum_b |d_b|)^2 = 4 TV^2``, so any alternative at total-variation
distance ``TV`` from ``p`` on the pooled bins has ``lambda >= 4 n TV^2``. Sample sizes and
minimum detectable effects below use that worst case: the stated power holds for every
alternative at that distance (on the bins), not just a favourable one.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

MIN_EXPECTED = 5.0


def pool_bins(expected: np.ndarray, min_expected: float = MIN_EXPECTED,
              max_bins: int | None = None) -> np.ndarray:
    """Bin label per token: sparse tokens pooled so each bin expects >= ``min_expected``.

    Tokens are taken in increasing order of expected count (ties by index) and gathered
    greedily until a bin reaches the target ``max(min_expected, total / max_bins)``; a short
    remainder joins the last bin. Tokens that expect nothing (probability 0) get label -1:
    they belong to the exact "never sampled" check, not to the chi-square.
    With ``max_bins`` the bins are at most that many, of roughly equal expected count.
    """
    expected = np.asarray(expected, dtype=np.float64)
    labels = np.full(expected.shape, -1, dtype=np.int64)
    support = np.flatnonzero(expected > 0)
    if support.size == 0:
        return labels
    order = support[np.argsort(expected[support], kind="stable")]
    total = float(expected[order].sum())
    target = min_expected if max_bins is None else max(min_expected, total / max_bins)
    cum = np.cumsum(expected[order])
    start, label = 0, 0
    while start < order.size:
        base = cum[start - 1] if start else 0.0
        stop = int(np.searchsorted(cum, base + target, side="left")) + 1
        if total - cum[min(stop, order.size) - 1] < target:
            stop = order.size  # the remainder would be too sparse: close the last bin
        labels[order[start:stop]] = label
        start, label = stop, label + 1
    return labels


def pooled(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Sum ``values`` within each bin of ``labels`` (label -1 dropped)."""
    keep = labels >= 0
    return np.bincount(labels[keep], weights=np.asarray(values, np.float64)[keep]).astype(
        np.float64, copy=False)              # numpy gives int64 for no bins at all


def pooled_counts(counts: np.ndarray, probs: np.ndarray,
                  labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(observed, expected) per bin of ``labels``: the two arrays ``chisquare_gof`` compares,
    the expected counts scaled to the draws that fell on the support (for reports)."""
    observed = pooled(counts, labels)
    expected = pooled(probs, labels)
    total = expected.sum()
    return observed, expected * (observed.sum() / total if total > 0 else 0.0)


def chisquare_gof(counts: np.ndarray, probs: np.ndarray, labels: np.ndarray):
    """Pearson chi-square of ``counts`` against ``probs`` on the bins ``labels``.

    Returns ``(statistic, df, p_value)``; the expected counts are scaled to the draws that
    fell on the support, so a draw on a zero-probability token (an exact failure checked
    elsewhere) does not also distort this statistic.
    """
    observed = pooled(counts, labels)
    expected = pooled(probs, labels)
    if observed.size < 2:                    # one bin or none (e.g. a table of greedy rows)
        return 0.0, 0, 1.0
    expected *= observed.sum() / expected.sum()
    statistic, p_value = stats.chisquare(observed, expected)
    return float(statistic), observed.size - 1, float(p_value)


def noncentrality_for_power(df: int, alpha: float, power: float) -> float:
    """The noncentrality ``lambda`` at which the level-``alpha`` chi^2(df) test has ``power``."""
    critical = stats.chi2.isf(alpha, df)
    gap = lambda lam: stats.ncx2.sf(critical, df, lam) - power
    hi = 1.0
    while gap(hi) < 0:
        hi *= 2.0
    return float(optimize.brentq(gap, 1e-9, hi, xtol=1e-6, rtol=1e-10))


def samples_for_tv(tv: float, df: int, alpha: float, power: float) -> int:
    """Draws per distribution so that every deviation of total variation ``tv`` (on ``df + 1``
    bins) is detected with ``power`` at level ``alpha``: ``n = lambda / (4 tv^2)``."""
    return math.ceil(noncentrality_for_power(df, alpha, power) / (4.0 * tv * tv))


def min_detectable_tv(n: int, df: int, alpha: float, power: float) -> float:
    """The smallest total-variation deviation (on the bins) detected with ``power``:
    ``sqrt(lambda / n) / 2``."""
    return math.sqrt(noncentrality_for_power(df, alpha, power) / n) / 2.0


def planned_samples(laws, tv: float, alpha: float, power: float,
                    max_bins: int | None = None) -> int:
    """Draws per law so that the pooled chi-square test of every law in ``laws`` (a list of
    probability vectors) detects any deviation of total variation ``tv`` on its bins with
    ``power`` at level ``alpha``. The bin count depends on the draws (pooling), so the size
    is iterated to its fixed point (a few steps)."""
    support = max(int((np.asarray(p) > 0).sum()) for p in laws)
    bins = support if max_bins is None else min(max_bins, support)
    draws = samples_for_tv(tv, max(1, bins - 1), alpha, power)
    for _ in range(8):
        bins = max(int(pool_bins(draws * np.asarray(p), max_bins=max_bins).max()) + 1
                   for p in laws)
        again = samples_for_tv(tv, max(1, bins - 1), alpha, power)
        if again <= draws:
            break
        draws = again
    return draws
