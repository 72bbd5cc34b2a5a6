"""sampling_harness.stats.fit: the one fit test of every family, against its parts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sampling_harness.stats.binomial import clopper_pearson, upper_p
from sampling_harness.stats.chisquare import chisquare_gof, min_detectable_tv, pool_bins
from sampling_harness.stats.fit import (
    chisquare_fit,
    coarse_and_fine,
    excess_p,
    impossible_draws,
    law_fit,
)

ALPHA, POWER = 1e-5, 0.99


def law_and_counts(seed: int = 3, draws: int = 4000):
    """A 60-cell law with a sparse tail and two cells of probability 0, and its counts."""
    p = np.concatenate([np.full(10, 0.07), 0.3 * 0.9 ** np.arange(48), [0.0, 0.0]])
    p /= p.sum()
    return p, np.random.default_rng(seed).multinomial(draws, p)


@pytest.mark.parametrize("max_bins", [None, 8])
def test_chisquare_fit_is_the_pooled_chisquare(max_bins):
    p, counts = law_and_counts()
    fit = chisquare_fit(counts, p, ALPHA, POWER, max_bins)
    labels = pool_bins(4000 * p, max_bins=max_bins)
    assert np.array_equal(fit.labels, labels)
    assert (fit.statistic, fit.df, fit.p_value) == chisquare_gof(counts, p, labels)
    assert fit.min_detectable_tv == min_detectable_tv(4000, fit.df, ALPHA, POWER)
    assert fit.draws == 4000 and fit.impossible == 0


def test_coarse_and_fine_in_that_order():
    p, counts = law_and_counts()
    fits = coarse_and_fine(counts, p, ALPHA, POWER, 8)
    assert list(fits) == ["coarse", "fine"]
    assert fits["coarse"].df <= 7 < fits["fine"].df
    assert fits["coarse"].min_detectable_tv < fits["fine"].min_detectable_tv


def test_law_fit_fails_impossible_draws_exactly():
    p, counts = law_and_counts()
    assert law_fit(counts, p, ALPHA, POWER).p_value == chisquare_fit(counts, p, ALPHA,
                                                                     POWER).p_value
    counts[-1] += 1
    fit = law_fit(counts.reshape(6, 10), p.reshape(6, 10), ALPHA, POWER)
    assert impossible_draws(counts, p) == fit.impossible == 1 and fit.p_value == 0.0


def test_law_fit_with_no_draws_detects_nothing():
    p, _ = law_and_counts()
    fit = law_fit(np.zeros(p.size, np.int64), p, ALPHA, POWER)
    assert (fit.df, fit.p_value, fit.min_detectable_tv) == (0, 1.0, 1.0)


def test_excess_p_is_the_exact_upper_tail_at_the_bound():
    assert excess_p(7, 100, 0.03) == upper_p(7, 100, 0.03)
    assert excess_p(3, 10, 1.5) == upper_p(3, 10, 1.0) == 1.0
    assert excess_p(0, 50, 0.2) == 1.0
    assert excess_p(12, 100, 0.03) < 1e-4 < excess_p(5, 100, 0.03)


def test_clopper_pearson_is_the_beta_quantile_interval():
    tail = (1 - 0.95) / 2
    low, high = clopper_pearson(3, 20)
    assert low == stats.beta.ppf(tail, 3, 18) and high == stats.beta.isf(tail, 4, 17)
    assert clopper_pearson(0, 0) == (0.0, 1.0)
    assert clopper_pearson(0, 5)[0] == 0.0 and clopper_pearson(5, 5)[1] == 1.0
