"""torch-rejection on forced cases, and each rejection mutant caught differing from it.

Forced cases have one possible output whatever the random draws: a target one-hot at the
draft accepts it, a draft of target probability 0 is rejected and the recovered token is
the residual's only token, greedy rows follow argmax (lowest index on ties). The mutant
demonstrations are small and deterministic (fixed seeds, many identical requests); the
statistical proof that the checks catch them is the self-test's (tests/test_selftest.py).
"""

from __future__ import annotations

import pytest
import torch

from sampling_harness.kernels.counter_uniforms import request_keys, uniforms
from sampling_harness.kernels.mutants import rejection_mutants as mutants
from sampling_harness.kernels.rejection.torch_rejection import NOISE_INDEX, rejection_torch
from sampling_harness.reference.rejection import greedy_output
from sampling_harness.suites.rejection.contract import validate_output


def batch(rows, counts, drafts, bonus=None, greedy=None, draft_rows=None, copies=1) -> dict:
    """Contract inputs from python lists, the whole batch ``copies`` times over."""
    target = torch.tensor(rows, dtype=torch.float32).reshape(-1, len(rows[0]) if rows else 4)
    batch_size = len(counts)
    bonus = bonus if bonus is not None else [target.shape[1] - 1] * batch_size
    greedy = greedy if greedy is not None else [False] * batch_size
    return {"draft_token_ids": torch.tensor(drafts, dtype=torch.int64).repeat(copies),
            "num_draft_tokens": list(counts) * copies,
            "draft_probs": None if draft_rows is None
            else torch.tensor(draft_rows, dtype=torch.float32).repeat(copies, 1),
            "target_probs": target.repeat(copies, 1),
            "bonus_token_ids": torch.tensor(bonus, dtype=torch.int64).repeat(copies),
            "greedy": torch.tensor(greedy, dtype=torch.bool).repeat(copies)}


ORDER = ("draft_token_ids", "num_draft_tokens", "draft_probs", "target_probs",
         "bonus_token_ids", "greedy")


def run(fn, inputs: dict, seed: int = 7) -> torch.Tensor:
    """``fn`` called positionally, as the harness does, on a fresh copy of ``inputs``."""
    fresh = [v.clone() if isinstance(v, torch.Tensor) else v
             for v in (inputs[name] for name in ORDER)]
    return fn(*fresh, seed)


def clean(inputs: dict, seed: int = 7) -> torch.Tensor:
    out = run(rejection_torch, inputs, seed)
    validate_output(out, inputs)
    return out


def random_batch(seed: int, counts=(3, 0, 2, 4, 1, 0), vocab: int = 13) -> dict:
    g = torch.Generator().manual_seed(seed)
    total = sum(counts)
    q = torch.rand(total, vocab, generator=g) ** 3 + 1e-3
    q /= q.sum(1, keepdim=True)
    p = q * torch.randn(total, vocab, generator=g).exp()
    p /= p.sum(1, keepdim=True)
    return {"draft_token_ids": torch.multinomial(q, 1, generator=g).squeeze(1),
            "num_draft_tokens": list(counts), "draft_probs": q, "target_probs": p,
            "bonus_token_ids": torch.randint(vocab, (len(counts),), generator=g),
            "greedy": torch.arange(len(counts)) % 3 == 2}


# --- the clean kernel ---------------------------------------------------------------------

Q = [[0.25, 0.25, 0.25, 0.25]] * 2


@pytest.mark.parametrize("draft_rows", [Q, None], ids=["draft-probs", "no-draft-probs"])
def test_target_one_hot_at_the_draft_is_accepted(draft_rows):
    inputs = batch([[0, 1, 0, 0], [0, 0, 0, 1]], [2], [1, 3], bonus=[2], draft_rows=draft_rows,
                   copies=50)
    assert (clean(inputs) == torch.tensor([1, 3, 2])).all()


@pytest.mark.parametrize("draft_rows", [[[0.5, 0.5, 0, 0]], None], ids=["draft-probs", "none"])
def test_zero_target_draft_is_rejected_and_recovered_from_the_residual(draft_rows):
    inputs = batch([[0, 0, 1, 0]], [1], [0], bonus=[3], draft_rows=draft_rows, copies=50)
    assert (clean(inputs) == torch.tensor([2, -1])).all()


def test_p_at_least_q_always_accepts():
    inputs = batch([[0.25, 0.25, 0.25, 0.25]], [1], [2], bonus=[1], draft_rows=Q[:1], copies=200)
    assert (clean(inputs) == torch.tensor([2, 1])).all()


def test_greedy_ties_take_the_lowest_index():
    tied = [[0.1, 0.4, 0.4, 0.1]] * 3
    inputs = batch(tied, [3], [1, 1, 2], bonus=[0], greedy=[True], draft_rows=Q + Q[:1])
    assert clean(inputs).tolist() == [[1, 1, 1, -1]]
    assert torch.tensor([[0.0, 1.0, 1.0]]).argmax(1).item() == 1  # torch.argmax: first max


def test_greedy_rows_equal_the_reference_in_a_mixed_batch():
    inputs = random_batch(3)
    inputs["greedy"] = torch.tensor([True, True, False, True, False, True])
    out = clean(inputs)
    start = 0
    for b, n in enumerate(inputs["num_draft_tokens"]):
        if inputs["greedy"][b]:
            expected = greedy_output(inputs["target_probs"][start:start + n].numpy(),
                                     inputs["draft_token_ids"][start:start + n].numpy(),
                                     int(inputs["bonus_token_ids"][b]), out.shape[1])
            assert out[b].tolist() == expected.tolist()
        start += n


def test_zero_draft_requests_emit_their_bonus_and_shift_nothing():
    hot = [[0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]]
    inputs = batch(hot, [0, 2, 0, 1, 0], [2, 1, 0], bonus=[3, 0, 1, 2, 3],
                   greedy=[False, False, True, True, False], draft_rows=Q + Q[:1])
    assert clean(inputs).tolist() == [[3, -1, -1], [2, 1, 0], [1, -1, -1], [0, 2, -1],
                                      [3, -1, -1]]


@pytest.mark.parametrize("counts", [[0], [0, 0, 0]])
def test_no_drafts_at_all(counts):
    inputs = batch([], counts, [], bonus=list(range(len(counts))),
                   greedy=[True] + [False] * (len(counts) - 1))
    assert clean(inputs).tolist() == [[b] for b in range(len(counts))]


def test_one_request_and_shapes():
    inputs = random_batch(5, counts=(4,))
    assert clean(inputs).shape == (1, 5)
    inputs = random_batch(6)
    out = clean(inputs)
    assert out.dtype == torch.int64 and out.shape == (6, 5)


def test_same_seed_same_output_other_seed_other_output():
    inputs = random_batch(1, counts=(4,) * 64, vocab=50)
    first, again, other = clean(inputs, 11), clean(inputs, 11), clean(inputs, 12)
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_inputs_untouched_and_draft_probs_none():
    inputs = random_batch(2)
    inputs["draft_probs"] = None
    kept = {k: v.clone() for k, v in inputs.items() if isinstance(v, torch.Tensor)}
    out = rejection_torch(**inputs, seed=3)
    validate_output(out, inputs)
    assert all(torch.equal(kept[k], inputs[k]) for k in kept)


def test_recovered_token_is_the_race_of_its_own_stream_over_the_whole_vocabulary():
    """The noise drawn only where a request races (it rejects, at positive residual) gives
    the token of the race over every token, noise -log u(key_b, NOISE_INDEX + v)."""
    for seed in range(6):
        inputs = random_batch(seed, counts=(3, 2, 4, 1, 2), vocab=11)
        inputs["greedy"][:] = False
        out = clean(inputs, seed)
        stop = (out >= 0).sum(1) - 1
        counts = torch.tensor(inputs["num_draft_tokens"])
        starts = torch.cumsum(counts, 0) - counts
        keys = request_keys(seed, counts.numel(), torch.device("cpu"))
        tokens = torch.arange(11)
        for b in torch.nonzero(stop < counts).flatten().tolist():
            row = int(starts[b] + stop[b])
            p = inputs["target_probs"][row].double()
            q = inputs["draft_probs"][row].double()
            noise = -torch.log(uniforms(keys[b], NOISE_INDEX + tokens))
            scores = torch.where(p > q, (p - q) / noise, -1.0)
            assert int(out[b, stop[b]]) == int(scores.argmax())


# --- each mutant differs from the clean kernel where it should ----------------------------

def test_draft_probs_dropped_rejects_drafts_with_p_equal_q():
    inputs = batch([[0.25] * 4], [1], [2], bonus=[1], draft_rows=Q[:1], copies=200)
    assert (clean(inputs)[:, 1] == 1).all()
    assert (run(mutants.draft_probs_dropped, inputs)[:, 1] == -1).any()


def test_shared_uniform_reaches_only_the_upper_residual():
    inputs = batch([[0.5, 0.25, 0.25]], [1], [0], bonus=[0], copies=400)
    recovered = lambda out: set(out[out[:, 1] == -1, 0].tolist())
    assert recovered(clean(inputs)) == {1, 2}
    assert recovered(run(mutants.shared_uniform, inputs)) == {2}


def test_greedy_unwritten_leaves_slots_after_the_emitted_token():
    inputs = batch([[0.1, 0.6, 0.3]] * 6, [3, 3], [1, 2, 2, 1, 1, 1], bonus=[0, 0],
                   greedy=[True, False], draft_rows=[[1 / 3] * 3] * 6)
    saved = (torch.are_deterministic_algorithms_enabled(),
             torch.is_deterministic_algorithms_warn_only_enabled(),
             torch.utils.deterministic.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True  # empty -> int64 max
    try:
        out = run(mutants.greedy_unwritten, inputs)
    finally:
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
        torch.utils.deterministic.fill_uninitialized_memory = saved[2]
    assert out[0, :2].tolist() == [1, 1] and (out[0, 2:] != -1).all()
    assert torch.equal(out[1], clean(inputs)[1])


def test_accept_all_and_ratio_inverted_accept_a_zero_target_draft():
    inputs = batch([[0, 0, 1, 0]], [1], [0], bonus=[3], draft_rows=[[0.5, 0.5, 0, 0]])
    assert clean(inputs).tolist() == [[2, -1]]
    assert run(mutants.accept_all, inputs).tolist() == [[0, 3]]
    assert run(mutants.ratio_inverted, inputs).tolist() == [[0, 3]]


def test_residual_from_target_emits_the_rejected_draft():
    inputs = batch([[0.5, 0.5]], [1], [0], bonus=[1], copies=200)
    draft_emitted = lambda out: ((out[:, 0] == 0) & (out[:, 1] == -1)).any()  # d rejected
    assert not draft_emitted(clean(inputs))
    assert draft_emitted(run(mutants.residual_from_target, inputs))


def test_zero_draft_shift_reads_the_next_request_one_row_late():
    hot = [[0, 0, 1, 0], [0, 1, 0, 0]]
    inputs = batch(hot, [0, 1, 1], [2, 1], bonus=[3, 0, 0], draft_rows=Q)
    assert clean(inputs).tolist() == [[3, -1], [2, 0], [1, 0]]
    assert run(mutants.zero_draft_shift, inputs)[1, 0].item() == 1


def test_greedy_tie_random_rejects_the_lowest_tied_draft():
    inputs = batch([[0.5, 0.5]], [1], [0], bonus=[1], greedy=[True], copies=100)
    assert (clean(inputs) == torch.tensor([0, 1])).all()
    assert (run(mutants.greedy_tie_random, inputs) == torch.tensor([1, -1])).all(1).any()


def test_noise_never_drawn_recovers_the_mode_every_time():
    inputs = batch([[0, 0.6, 0.4]], [1], [0], bonus=[0], copies=200)
    assert set(clean(inputs)[:, 0].tolist()) == {1, 2}
    for seed in (1, 2):
        assert set(run(mutants.noise_never_drawn, inputs, seed)[:, 0].tolist()) == {1}
