"""The float64 reference: exact distributions and the noise definition."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings

from sampling_harness.reference.categorical import (
    chunked_race_winner,
    collision_probability,
    exact_probs,
    exponential_from_bits,
    pair_probs,
    race_scores,
    rare_mass,
)
from sampling_harness.strategies import probs_rows, vocab_sizes


def test_exact_probs_renormalises_the_float32_row():
    row = torch.tensor([[0.1, 0.2, 0.7000001]], dtype=torch.float32)
    p = exact_probs(row)
    assert p.dtype == np.float64 and p.sum() == pytest.approx(1.0, abs=1e-15)
    assert p[0, 0] == pytest.approx(np.float64(np.float32(0.1)) / row.double().sum().item())


def test_exact_probs_rejects_a_row_without_mass():
    with pytest.raises(ValueError, match="no positive mass"):
        exact_probs(torch.zeros(1, 3))


@settings(max_examples=50, deadline=None, derandomize=True, database=None)
@given(data=vocab_sizes(5000).flatmap(probs_rows))
def test_generated_rows_are_valid_probs(data):
    """Every strategy-made row is float32, finite, non-negative, sums to 1, has mass."""
    assert data.dtype == np.float32 and np.isfinite(data).all() and (data >= 0).all()
    assert (data > 0).any() and abs(float(data.astype(np.float64).sum()) - 1) < 1e-4


def test_pair_and_collision_probabilities():
    p = np.array([0.5, 0.25, 0.25])
    assert collision_probability(p) == pytest.approx(0.375)
    assert pair_probs(p, p).sum() == pytest.approx(1.0)
    assert np.trace(pair_probs(p, p)) == pytest.approx(collision_probability(p))
    assert rare_mass(p, np.array([False, True, True])) == pytest.approx(0.5)


def test_race_never_picks_a_zero_probability_token():
    probs = np.array([[0.0, 1e-30, 0.0]])
    assert race_scores(probs, np.array([[1e-300, 1e30, 1e-300]])).argmax(axis=1)[0] == 1


def test_chunked_race_picks_the_winning_chunks_best_token():
    probs = np.array([[0.1, 0.2, 0.3, 0.4]])
    chunk_q = np.array([[1.0, 0.1]])             # chunk 1 (mass 0.7 / 0.1) beats chunk 0
    token_q = np.array([[1e-9, 1.0, 1.0, 2.0]])  # token 0 would win a one-level race
    winner, chunk_gap, token_gap = chunked_race_winner(probs, chunk_q, token_q, width=2)
    assert winner[0] == 2
    assert chunk_gap[0] == pytest.approx((7.0 - 0.3) / 7.0)
    assert token_gap[0] == pytest.approx((0.3 - 0.2) / 0.3)


def test_exponential_from_bits_tails_and_midpoints():
    half = 2**31
    q = exponential_from_bits(np.array([0, 2**32 - 1, half - 1, half, 4096]),
                              np.array([0, 0, 0, 0, 7]))
    assert q[0] == pytest.approx(0.5 * 2.0**-64, rel=1e-12)          # refined lower end
    assert q[1] == pytest.approx(-np.log(0.5 * 2.0**-64), rel=1e-12)  # refined upper end
    assert q[2] == pytest.approx(-np.log1p(-(half - 0.5) / 2**32), rel=1e-12)
    assert q[3] == pytest.approx(-np.log((half - 0.5) / 2**32), rel=1e-12)
    assert q[4] == pytest.approx((4096.5) / 2**32, rel=1e-9)          # no refinement at 4096
