"""The float32 floor of family ``rejection``'s ``acceptance_tail``
(suites/rejection/acceptance_tail.py): the mutant's mechanism, which only a GPU budget shows
whole, and the planned requests. Small and fast: the check itself runs in
tests/test_selftest.py (on a GPU, the mutant ``accept-u-fp32``)."""

from __future__ import annotations

import torch
from scipy import stats

from sampling_harness.kernels.mutants import rejection_mutants
from sampling_harness.suites.rejection.acceptance_tail import (
    FLOOR_RATIO,
    floor_requests,
    ratio_batch,
    ratio_rows,
)
from sampling_harness.suites.rejection.contract import BUDGETS

CPU = torch.device("cpu")


def test_the_chain_float32_uniform_accepts_drafts_of_tiny_ratio_when_it_is_0():
    u = torch.tensor([0.0, 2.0**-25, 2.0**-23])
    p, q, _ = ratio_rows(FLOOR_RATIO)
    p_d, q_d = torch.full((3,), float(p[0]), dtype=torch.float64), torch.full((3,), 0.5,
                                                                             dtype=torch.float64)
    accepted = rejection_mutants._accept_float32_uniform(u.double(), p_d, q_d)
    assert accepted.tolist() == [True, True, False]
    batch = ratio_batch(FLOOR_RATIO, 8, CPU)
    out = rejection_mutants.accept_u_fp32(*(batch[n] for n in (
        "draft_token_ids", "num_draft_tokens", "draft_probs", "target_probs", "bonus_token_ids",
        "greedy")), 1)
    assert out.shape == (8, 2)


def test_the_chain_float32_floor_streams_at_least_2_29_requests_at_standard():
    accept, rate = ratio_rows(FLOOR_RATIO)[2], BUDGETS["standard"].float32_floor_rate
    for alpha in (1e-4, 1e-6):
        planned = floor_requests(rate, accept, alpha / 7 / 4, 0.99)
        assert planned >= 2**29
        caught = stats.binom.sf(0, planned, 2.0**-24)
        assert caught > 0.99


def test_the_validation_holds_a_large_lists_counts_only_while_it_is_unchanged():
    from sampling_harness.suites.rejection.contract import host_counts

    counts = [1] * 2**16
    assert host_counts(counts).sum() == 2**16
    assert host_counts(counts) is host_counts(counts)        # held: not converted again
    counts[5] = 3                                            # the same list, changed
    assert host_counts(counts)[5] == 3 and host_counts(counts).sum() == 2**16 + 2
    assert host_counts(list(counts)).sum() == 2**16 + 2       # an equal list: converted
    assert host_counts((2, 0, 1)).tolist() == [2, 0, 1]      # a tuple, a short list: as is
