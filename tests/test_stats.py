"""Calibration tests for sampling_harness.stats: chi-square pooling and power, exact binomial tests,
and the Bonferroni budget split. Simulations use fixed seeds, and each count of simulated
rejections is judged against an exact binomial acceptance region at level 1e-6."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sampling_harness.stats.binomial import (
    equal_tailed_p,
    fraction_schedule,
    looks_alpha,
    min_detectable_deficit,
    min_detectable_rate,
    never_rate,
    rejection_bounds,
)
from sampling_harness.stats.chisquare import (
    MIN_EXPECTED,
    chisquare_gof,
    min_detectable_tv,
    noncentrality_for_power,
    pool_bins,
    pooled,
    samples_for_tv,
)
from sampling_harness.stats.multiple import adjusted_p, bonferroni

SIM_LEVEL = 1e-6  # chance that a correct simulation test fails by bad luck
REL = 1e-9  # float slack when comparing sums that were accumulated in different orders


def sparse_tail_probs() -> np.ndarray:
    """8 heavy tokens (0.1 each), a 200-token geometric tail (0.2 in all), 5 impossible tokens."""
    tail = 0.97 ** np.arange(200)
    return np.concatenate([np.full(8, 0.1), 0.2 * tail / tail.sum(), np.zeros(5)])


def acceptance_interval(trials: int, rate: float) -> tuple[int, int]:
    """Exact two-sided region of Binomial(trials, rate) holding all but SIM_LEVEL of its mass."""
    return (int(stats.binom.ppf(SIM_LEVEL / 2, trials, rate)),
            int(stats.binom.isf(SIM_LEVEL / 2, trials, rate)))


# --- pool_bins ----------------------------------------------------------------------------

expected_counts = st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 50.0)), min_size=1,
                           max_size=60)


@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(expected=expected_counts, max_bins=st.one_of(st.none(), st.integers(1, 12)))
def test_pool_bins_properties(expected, max_bins):
    """pool_bins: -1 exactly on zero tokens, labels 0..k-1, every bin >= target, k <= max_bins."""
    expected = np.array(expected)
    labels = pool_bins(expected, max_bins=max_bins)
    assert labels.shape == expected.shape
    assert np.array_equal(labels == -1, expected == 0)
    used = np.unique(labels[labels >= 0])
    assert np.array_equal(used, np.arange(used.size))
    total = expected.sum()
    if total == 0:
        return
    sums = pooled(expected, labels)
    assert sums.sum() == pytest.approx(total, rel=REL)
    if max_bins is not None:
        assert used.size <= max_bins
    if total >= MIN_EXPECTED:
        target = MIN_EXPECTED if max_bins is None else max(MIN_EXPECTED, total / max_bins)
        assert np.all(sums >= target * (1 - REL)), (sums, target)
    else:
        assert used.size == 1


def test_pool_bins_keeps_dense_tokens_apart():
    """pool_bins leaves tokens that each expect >= 5 draws in bins of their own."""
    expected = np.array([10.0, 0.0, 7.0, 5.0, 100.0])
    labels = pool_bins(expected)
    assert labels[1] == -1
    assert len(set(labels[[0, 2, 3, 4]])) == 4


# --- chi-square: level, power, sample sizes ------------------------------------------------

def test_chisquare_gof_calibrated_under_null():
    """chisquare_gof at alpha=0.01 rejects a correct sampler at rate alpha (sparse tail pooled)."""
    rng = np.random.default_rng(20240601)
    probs, draws, reps, alpha = sparse_tail_probs(), 2000, 2000, 0.01
    labels = pool_bins(draws * probs)
    assert labels.max() + 1 >= 10  # the tail was pooled into several bins, not one
    assert np.unique(labels[8:208]).size < 200  # ... and pooling did merge tail tokens
    counts = rng.multinomial(draws, probs, size=reps)
    rejections = sum(chisquare_gof(c, probs, labels)[2] <= alpha for c in counts)
    lo, hi = acceptance_interval(reps, alpha)
    assert lo <= rejections <= hi, (rejections, lo, hi)


def test_chisquare_gof_ignores_draws_on_zero_probability_tokens():
    """chisquare_gof rescales to draws on the support: stray draws off it leave X^2 unchanged."""
    rng = np.random.default_rng(7)
    probs = sparse_tail_probs()
    labels = pool_bins(3000 * probs)
    counts = rng.multinomial(3000, probs)
    stray = counts.copy()
    stray[-5:] += 40
    assert chisquare_gof(stray, probs, labels) == chisquare_gof(counts, probs, labels)


def pooled_design(probs, tv, alpha, power):
    """(draws, labels, df) at the fixed point draws = samples_for_tv(tv, df) of the pooling."""
    df = 1
    for _ in range(20):
        draws = samples_for_tv(tv, df, alpha, power)
        labels = pool_bins(draws * probs)
        if labels.max() == df:
            return draws, labels, df
        df = int(labels.max())
    raise AssertionError("bin count did not settle")


def shift_by_tv(probs, labels, tv):
    """Alternative at TV exactly ``tv`` on the bins: ``tv`` of mass moves proportionally from
    a half of the bins (by mass) to the other half. Equal halves is the worst case."""
    mass = pooled(probs, labels)
    donor, halves = np.zeros(mass.size, bool), [0.0, 0.0]
    for b in np.argsort(mass)[::-1]:  # greedy split into two halves of nearly equal mass
        donor[b] = halves[1] < halves[0]
        halves[int(donor[b])] += mass[b]
    factor = np.where(donor, 1 - tv / mass[donor].sum(), 1 + tv / mass[~donor].sum())
    alt = probs * np.where(labels >= 0, factor[labels], 1.0)
    assert 0.5 * np.abs(pooled(alt, labels) - mass).sum() == pytest.approx(tv, rel=1e-12)
    return alt


def test_chisquare_power_at_samples_for_tv():
    """With samples_for_tv draws, an alternative at TV 0.05 on the bins is caught w.p. 0.99."""
    rng = np.random.default_rng(99)
    probs, tv, alpha, power, reps = sparse_tail_probs(), 0.05, 1e-3, 0.99, 400
    draws, labels, df = pooled_design(probs, tv, alpha, power)
    alt = shift_by_tv(probs, labels, tv)
    counts = rng.multinomial(draws, alt / alt.sum(), size=reps)
    caught = sum(chisquare_gof(c, probs, labels)[2] <= alpha for c in counts)
    assert caught >= stats.binom.ppf(SIM_LEVEL, reps, power), (caught, draws, df)


@pytest.mark.parametrize("tv", [0.2, 0.05, 0.013, 0.001])
@pytest.mark.parametrize("df", [1, 9, 60])
def test_samples_for_tv_round_trip(tv, df):
    """min_detectable_tv(samples_for_tv(tv)) <= tv, and one draw fewer no longer reaches tv."""
    n = samples_for_tv(tv, df, 1e-3, 0.99)
    assert min_detectable_tv(n, df, 1e-3, 0.99) <= tv
    assert min_detectable_tv(n - 1, df, 1e-3, 0.99) > tv


@pytest.mark.parametrize("df", [1, 4, 50, 400])
@pytest.mark.parametrize("alpha,power", [(0.05, 0.5), (1e-3, 0.99), (1e-6, 0.999), (1e-4, 0.9)])
def test_noncentrality_for_power(df, alpha, power):
    """noncentrality_for_power: ncx2.sf(chi2.isf(alpha, df), df, lambda) equals power."""
    lam = noncentrality_for_power(df, alpha, power)
    assert stats.ncx2.sf(stats.chi2.isf(alpha, df), df, lam) == pytest.approx(power, abs=1e-6)


# --- exact binomial tests -------------------------------------------------------------------

BOUND_CASES = [(100, 0.01, 0.05), (1000, 0.3, 1e-3), (100_000, 1e-4, 1e-4),
               (100_000, 1e-4, 0.05), (20, 0.5, 0.01), (1_000_000, 0.01, 1e-6)]


@pytest.mark.parametrize("n,p,alpha", BOUND_CASES)
def test_rejection_bounds_exact(n, p, alpha):
    """rejection_bounds: each tail holds <= alpha/2 and widening it by one would exceed alpha/2."""
    lo, hi = rejection_bounds(n, p, alpha)
    half = alpha / 2
    assert stats.binom.cdf(lo, n, p) <= half < stats.binom.cdf(lo + 1, n, p)
    assert stats.binom.sf(hi - 1, n, p) <= half < stats.binom.sf(hi - 2, n, p)


def test_rejection_bounds_no_lower_region():
    """rejection_bounds returns lo = -1 when even zero events is not rare enough to reject."""
    assert rejection_bounds(100, 0.01, 0.05)[0] == -1  # P(X = 0) = 0.366 > 0.025


@pytest.mark.parametrize("n,p,alpha", BOUND_CASES)
def test_equal_tailed_p_matches_bounds(n, p, alpha):
    """equal_tailed_p(k) <= alpha exactly when k <= lo or k >= hi."""
    lo, hi = rejection_bounds(n, p, alpha)
    ks = np.arange(max(0, lo - 30), min(n, hi + 30) + 1)
    for k in ks:
        assert (equal_tailed_p(int(k), n, p) <= alpha) == (k <= lo or k >= hi), k


DEFICIT_CASES = [(100_000, 1e-3, 1e-4, 0.9), (10_000, 0.05, 1e-3, 0.99),
                 (1_000_000, 0.01, 1e-4, 0.99), (100_000, 1e-4, 1e-3, 0.5)]


@pytest.mark.parametrize("n,p,alpha,power", DEFICIT_CASES)
def test_min_detectable_deficit_minimal(n, p, alpha, power):
    """min_detectable_deficit d: the test has the power at p(1-d) but not at p(1-(d-0.01))."""
    lo, _ = rejection_bounds(n, p, alpha)
    d = min_detectable_deficit(n, p, alpha, power)
    assert 0 < d < 1
    assert stats.binom.cdf(lo, n, p * (1 - d)) >= power - 1e-6
    assert stats.binom.cdf(lo, n, p * (1 - (d - 0.01))) < power


def test_min_detectable_deficit_unreachable():
    """min_detectable_deficit is 1.0 when n*p is so small that zero events cannot reject."""
    assert stats.binom.pmf(0, 200, 0.005) > 1e-3 / 2  # zero events is not significant
    assert min_detectable_deficit(200, 0.005, 1e-3, 0.9) == 1.0


def one_sided_threshold(n, p, alpha):
    """Smallest k with P(X >= k) <= alpha, found by a plain scan of scipy's tail."""
    k = int(n * p)
    while stats.binom.sf(k - 1, n, p) > alpha:
        k += 1
    return k


@pytest.mark.parametrize("n,p,alpha,power", DEFICIT_CASES + [(50, 0.02, 0.05, 0.8)])
def test_min_detectable_rate(n, p, alpha, power):
    """min_detectable_rate q > p: the one-sided test has the power at q, not slightly below q."""
    q = min_detectable_rate(n, p, alpha, power)
    k = one_sided_threshold(n, p, alpha)
    assert q > p
    assert stats.binom.sf(k - 1, n, q) >= power - 1e-6
    assert stats.binom.sf(k - 1, n, q - 1e-3 * (q - p)) < power


@pytest.mark.parametrize("n", [1, 7, 1000, 10**6, 10**9])
@pytest.mark.parametrize("power", [0.5, 0.99, 0.999999])
def test_never_rate(n, power):
    """never_rate: at the returned rate, n trials see no event with probability 1 - power."""
    rate = never_rate(n, power)
    assert 0 < rate <= power
    assert math.exp(n * math.log1p(-rate)) == pytest.approx(1 - power, rel=1e-9)


# --- multiple testing -----------------------------------------------------------------------

def test_bonferroni():
    """bonferroni splits the level evenly and refuses zero tests."""
    assert bonferroni(1e-4, 5) == pytest.approx(2e-5, rel=1e-12)
    assert bonferroni(0.05, 1) == 0.05
    with pytest.raises(ValueError):
        bonferroni(1e-4, 0)


def test_adjusted_p():
    """adjusted_p is min(1, m * min p): 0.03 for three tests, 1.0 when empty, capped at 1."""
    assert adjusted_p([0.01, 0.5, 0.2]) == pytest.approx(0.03, rel=1e-12)
    assert adjusted_p([]) == 1.0
    assert adjusted_p([0.4, 0.9, 0.6]) == 1.0
    assert adjusted_p([0.3]) == 0.3


def test_fraction_schedule_and_looks_alpha():
    """fraction_schedule(4) is [1/8, 1/4, 1/2, 1]; looks_alpha splits alpha evenly over looks."""
    np.testing.assert_array_equal(fraction_schedule(4), [0.125, 0.25, 0.5, 1.0])
    np.testing.assert_array_equal(fraction_schedule(1), [1.0])
    assert looks_alpha(0.05, 4) == pytest.approx(0.0125, rel=1e-12)


def test_group_sequential_false_fail_rate():
    """A 4-look binomial test at alpha/4 per look keeps the false-fail rate at most alpha."""
    rng = np.random.default_rng(31337)
    alpha, n, p, reps, looks = 0.05, 2000, 0.01, 4000, 4
    sizes = np.round(n * fraction_schedule(looks)).astype(int)
    level = looks_alpha(alpha, looks)
    # Which cumulative counts reject at each look, straight from equal_tailed_p.
    rejects = [np.array([equal_tailed_p(k, int(m), p) <= level for k in range(m + 1)])
               for m in sizes]
    segments = np.diff(sizes, prepend=0)
    events = np.cumsum(rng.binomial(segments, p, size=(reps, looks)), axis=1)
    failed = np.zeros(reps, bool)
    for j in range(looks):
        failed |= rejects[j][events[:, j]]
    bound = stats.binom.isf(SIM_LEVEL, reps, alpha)
    assert failed.sum() <= bound, (failed.sum(), bound)
    assert failed.sum() > 0  # the simulation can reject at all


def test_min_detectable_excess_is_where_the_upper_tail_rejects_with_the_power():
    """At the stated excess the upper half of the equal-tailed test (level alpha / 2)
    rejects with probability 0.99; at 80 % of it, with less."""
    from scipy import stats

    from sampling_harness.checks.rare_wins import min_detectable_excess

    n, p, alpha = 2**22, 1e-9, 1e-7
    excess = min_detectable_excess(n, p, alpha, 0.99)
    hi = int(stats.binom.isf(alpha / 2, n, p)) + 1
    while stats.binom.sf(hi - 2, n, p) <= alpha / 2:
        hi -= 1
    assert stats.binom.sf(hi - 1, n, p) <= alpha / 2
    assert abs(stats.binom.sf(hi - 1, n, p * (1 + excess)) - 0.99) < 1e-6
    assert stats.binom.sf(hi - 1, n, p * (1 + 0.8 * excess)) < 0.99


def test_chisquare_gof_with_no_bins_or_one_bin_is_no_evidence():
    """A table whose every row is pooled away (labels all -1, e.g. greedy rows only) or one
    bin: no test (p = 1), not numpy's int64 empty bincount failing an in-place scale."""
    counts, probs = np.array([3, 4]), np.array([0.5, 0.5])
    assert chisquare_gof(counts, probs, np.array([-1, -1])) == (0.0, 0, 1.0)
    assert chisquare_gof(counts, probs, np.array([0, 0])) == (0.0, 0, 1.0)


def test_a_gpu_quick_tail_adds_the_float32_floor_scale():
    """On a GPU a tail sweep that reaches 1e-6 also tests 1e-8 at the family's vocabulary
    (where it stops above it: quick) and 1e-8 in short rows of one chunk (64 tokens), where
    noise wrong below 2^-24 shows in a kernel that races in chunks; a CPU keeps the
    budget's scales, and so does a sweep that stops above 1e-6."""
    from types import SimpleNamespace

    import torch

    from sampling_harness.checks.rare_wins import LONG_ROW, SHORT_ROW, device_scales

    gpu, cpu = (SimpleNamespace(device=torch.device(kind)) for kind in ("cuda", "cpu"))
    family = [(1e-2, LONG_ROW), (1e-4, LONG_ROW), (1e-6, LONG_ROW)]
    assert device_scales(gpu, (1e-2, 1e-4, 1e-6)) == (
        *family, (1e-8, LONG_ROW), (1e-8, SHORT_ROW))
    assert device_scales(gpu, (1e-2, 1e-4, 1e-6), short_rows=False) == (*family, (1e-8, LONG_ROW))
    assert device_scales(cpu, (1e-2, 1e-4, 1e-6)) == tuple(family)
    assert device_scales(gpu, (1e-2, 1e-4, 1e-6, 1e-8)) == (
        *family, (1e-8, LONG_ROW), (1e-8, SHORT_ROW))
    assert device_scales(gpu, (1e-2,)) == ((1e-2, LONG_ROW),)
