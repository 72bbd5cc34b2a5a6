"""triton-inverse-cdf against numpy's inverse CDF on the kernel's own uniforms.

For the uniform u the kernel draws for a row (``row_uniforms``), the id must equal
``searchsorted(C, u C[-1], side="right")`` with C numpy's float64 cumulative sum, except
where u C[-1] lies within float64 rounding of a cumulative sum (the kernel sums in another
order): those rows are ambiguous, accepted when the id is either neighbour, and counted.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from sampling_harness.device import default_device

icdf = pytest.importorskip("sampling_harness.kernels.sample.triton_inverse_cdf")

DEVICE = default_device()
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
AMBIGUOUS = 1e-12   # relative distance of u T from a cumulative sum (float64 sums reordered)
FIXED_U = 0.0       # the uniform of every row under test_ends_of_the_row


@triton.jit
def fixed_uniform(seed, rows):
    return tl.full(rows.shape, FIXED_U, tl.float64)


def probs_batch(batch: int, vocab: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(batch, vocab, generator=g).pow_(6)
    p[:, torch.randperm(vocab, generator=g)[: vocab // 3]] = 0  # masked tokens
    p[:, 0] += 0.5 * (vocab > 1)
    p[:, -1] = 0.0 if vocab > 2 else p[:, -1]                   # a zero tail past the last
    return (p / p.sum(dim=1, keepdim=True)).to(DEVICE)


def assert_inverse_cdf(probs: torch.Tensor, seed: int) -> np.ndarray:
    ids = icdf.inverse_cdf(probs.clone(), seed).cpu().numpy()
    u = icdf.row_uniforms(probs.shape[0], seed, probs.device).cpu().numpy()
    p = probs.double().cpu().numpy()
    cum = np.cumsum(p, axis=1)
    target = u * cum[:, -1]
    ref = np.array([np.searchsorted(c, t, side="right") for c, t in zip(cum, target, strict=True)])
    ref = np.minimum(ref, p.shape[1] - 1)
    near = np.abs(cum - target[:, None]).min(axis=1) <= AMBIGUOUS * cum[:, -1]
    wrong = (ids != ref) & ~near
    assert not wrong.any(), f"rows {np.flatnonzero(wrong)[:5]}: {ids[wrong][:5]} != numpy's"
    assert near.mean() < 0.01
    assert (p[np.arange(len(ids)), ids] > 0).all(), "a zero-probability token was chosen"
    return ids


@pytest.mark.parametrize("batch,vocab", [(64, 1031), (8, 13), (3, 1), (5, 2), (2, 40000)])
def test_matches_numpy_searchsorted_on_same_uniforms(batch, vocab):
    """Every unambiguous row picks numpy's float64 inverse-CDF token."""
    assert_inverse_cdf(probs_batch(batch, vocab, batch * vocab), seed=12345)


@pytest.mark.parametrize("block_r,splits", [(1, 1), (1, 7), (4, 3)])
def test_split_launches_agree(monkeypatch, block_r, splits):
    """One row per program and rows split into runs of chunks (finished by the last
    program of a row block) give the very same ids as the default launch."""
    probs = probs_batch(3, 30011, 7)
    default = assert_inverse_cdf(probs, seed=99)
    monkeypatch.setattr(icdf, "_launch_shape", lambda b, v, d, *launch: (block_r, splits, 1))
    assert np.array_equal(assert_inverse_cdf(probs, seed=99), default)


def test_uniforms_are_uniform_and_below_one():
    u = icdf.row_uniforms(4096, 3, DEVICE).cpu().numpy()
    assert ((u >= 0) & (u < 1)).all()
    assert abs(u.mean() - 0.5) < 6 * np.sqrt(1 / 12 / u.size)
    counts = np.histogram(u, bins=16, range=(0, 1))[0]
    assert ((counts - 256) ** 2 / 256).sum() < 60    # chi-square(15) far tail


@pytest.mark.skipif(not INTERPRET, reason="replaces a jitted function: interpreter only")
@pytest.mark.parametrize("u,expect", [(0.0, [10, 10, 7]), (1.0 - 2.0**-53, [4000, 4999, 4000]),
                                      (1.0, [4100, 4999, 4100])])
def test_ends_of_the_row(monkeypatch, u, expect):
    """u = 0 picks the first positive token; u = 1 - 2^-53 the token whose sum crosses u T
    (a mass of 1e-30 after it is below float64's resolution of T); u T rounded up to T (here
    u = 1) the last positive token: never a zero-probability token, never an id past V."""
    monkeypatch.setattr(sys.modules[__name__], "FIXED_U", u)
    monkeypatch.setattr(icdf, "row_uniform", fixed_uniform)
    probs = torch.zeros(3, 5000, device=DEVICE)
    probs[:, 10] = 0.5
    probs[:, 4000] = 0.25
    probs[:, 4100] = 1e-30
    probs[1, 4999] = 0.1
    probs[2, 7] = 1e-38
    ids = icdf.inverse_cdf(probs, 1).tolist()
    assert ids == expect


def test_never_a_zero_probability_token():
    """Rows of 2 positive tokens among 4099 (one of them tiny), over many seeds."""
    probs = torch.zeros(256, 4099)
    g = torch.Generator().manual_seed(5)
    for r in range(256):
        a, b = torch.randperm(4099, generator=g)[:2].tolist()
        probs[r, a], probs[r, b] = 1.0, 1e-7
    probs = probs.to(DEVICE)
    for seed in range(4):
        ids = icdf.inverse_cdf(probs.clone(), seed)
        assert bool((probs.gather(1, ids[:, None]) > 0).all())


def test_same_seed_same_ids_and_seed_changes_draws():
    probs = probs_batch(16, 257, 1)
    first = icdf.inverse_cdf(probs.clone(), 5)
    assert torch.equal(first, icdf.inverse_cdf(probs.clone(), 5))
    assert not torch.equal(first, icdf.inverse_cdf(probs.clone(), 6))


def test_rejects_wrong_dtype():
    with pytest.raises(ValueError, match="float32"):
        icdf.inverse_cdf(torch.ones(2, 3, dtype=torch.float64), 0)


def test_race_launch_knobs_keep_the_draws(monkeypatch):
    """triton-exact's sweep knobs (splits, stages, unroll) never change its draws: the ids
    are identical under every setting (one row per program and one warp throughout: those
    order the float32 chunk sums)."""
    race = pytest.importorskip("sampling_harness.kernels.sample.triton_race")
    probs = probs_batch(3, 9001, 11)
    seen = set()
    for knobs, shape in [({}, (1, 1)), ({"stages": 2}, (1, 1)), ({"unroll": 2}, (1, 3)),
                         ({}, (1, 3)), ({"stages": 1}, (1, 2))]:
        monkeypatch.setattr(race, "_launch_shape", lambda b, v, d, *launch, s=shape: (*s, 1))
        seen.add(tuple(race.race_exact(probs.clone(), 21, **knobs).tolist()))
    assert len(seen) == 1, seen
