"""triton-exact against the float64 race fed the very same random bits (noise coupling).

The kernel and the reference must pick the same token in every row, except where the two
best float64 scores are so close that float32 rounding may order them either way; those
rows are ambiguous, accepted either way, and counted (they must stay rare).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

triton_race = pytest.importorskip("sampling_harness.kernels.sample.triton_race")

from sampling_harness.device import default_device  # noqa: E402
from sampling_harness.reference.categorical import (  # noqa: E402
    chunked_race_winner,
    exponential_from_bits,
)

DEVICE = default_device()
AMBIGUOUS = 2e-6  # relative gap of the top two float64 scores that float32 may not order
CHUNK_AMBIGUOUS = 1e-5  # chunk masses are float32 sums of up to 2048 terms


def reference_race(probs: torch.Tensor, seed: int):
    """(winner, ambiguous) per row: the float64 two-level race on the kernel's own words."""
    main, refine, chunk = triton_race.race_bits(*probs.shape, seed, probs.device)
    token_q = exponential_from_bits(main.cpu().numpy(), refine.cpu().numpy())
    chunk_words = chunk.cpu().numpy()
    chunk_q = exponential_from_bits(chunk_words[..., 0], chunk_words[..., 1], refine_below=2**32)
    winner, chunk_gap, token_gap = chunked_race_winner(
        probs.double().cpu().numpy(), chunk_q, token_q, triton_race.chunk_width(probs.shape[1]))
    return winner, (chunk_gap <= CHUNK_AMBIGUOUS) | (token_gap <= AMBIGUOUS)


def probs_batch(batch: int, vocab: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(batch, vocab, generator=g).pow_(6)
    p[:, torch.randperm(vocab, generator=g)[: vocab // 3]] = 0  # masked tokens
    p[:, 0] += 0.5 * (vocab > 1)
    return (p / p.sum(dim=1, keepdim=True)).to(DEVICE)


def assert_coupled(probs: torch.Tensor, seed: int) -> None:
    ids = triton_race.race_exact(probs.clone(), seed).cpu().numpy()
    winner, ambiguous = reference_race(probs, seed)
    wrong = (ids != winner) & ~ambiguous
    assert not wrong.any(), f"rows {np.flatnonzero(wrong)[:5]} differ from the float64 race"
    assert ambiguous.mean() < 0.01


@pytest.mark.parametrize("batch,vocab", [(64, 1031), (8, 13), (3, 1), (5, 2), (2, 40000)])
def test_matches_float64_race_on_same_bits(batch, vocab):
    """Every unambiguous row picks the float64 race's winner."""
    assert_coupled(probs_batch(batch, vocab, batch * vocab), seed=12345)


@pytest.mark.parametrize("block_r,splits", [(1, 1), (1, 7), (4, 3)])
def test_split_launches_match(monkeypatch, block_r, splits):
    """One row per program (the GPU's layout) and rows split into runs of chunks (winners
    reduced across splits) give the same coupled winners."""
    monkeypatch.setattr(triton_race, "_launch_shape",
                        lambda b, v, d, *launch: (block_r, splits, 1))
    assert_coupled(probs_batch(3, 30011, 7), seed=99)


def test_noise_is_exponential_in_both_tails():
    """The float64 noise from the kernel's words has Exp(1) moments, and its tails reach far
    past float32's 2^-24 floor by construction (refinement bits below 2^-20)."""
    main, refine, _ = triton_race.race_bits(64, 4096, 3, DEVICE)
    q = exponential_from_bits(main.cpu().numpy(), refine.cpu().numpy())
    assert abs(q.mean() - 1) < 6 / np.sqrt(q.size) and abs(q.var() - 1) < 12 / np.sqrt(q.size)
    tiny = exponential_from_bits(np.array([0, 2**32 - 1]), np.array([0, 0]))
    assert tiny[0] < 1e-19 and tiny[1] > 44


def test_same_seed_same_ids_and_seed_changes_draws():
    probs = probs_batch(16, 257, 1)
    first = triton_race.race_exact(probs.clone(), 5)
    assert torch.equal(first, triton_race.race_exact(probs.clone(), 5))
    assert not torch.equal(first, triton_race.race_exact(probs.clone(), 6))


def test_rejects_wrong_dtype():
    with pytest.raises(ValueError, match="float32"):
        triton_race.race_exact(torch.ones(2, 3, dtype=torch.float64), 0)
