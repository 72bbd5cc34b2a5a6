"""The float64 law of family ``rejection`` and the strategies that feed it."""

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st
from scipy import stats

from sampling_harness.reference.rejection import (
    RejectionLaws,
    acceptance_length_law,
    acceptance_probs,
    greedy_output,
    joint_law,
    rejection_probs,
    residual,
    residual_support,
    slot_marginals,
)
from sampling_harness.strategies.probs import normalised
from sampling_harness.strategies.rejection import (
    DRAFT_CHOICES,
    LAW_KINDS,
    choose_draft,
    draft_counts,
    law_pairs,
    pair_of_kind,
    rejection_laws,
    residual_possible,
)

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, database=None)
LEVEL = 1e-6  # Monte Carlo checks: a correct reference fails with probability < 1e-6


def dyadic(weights) -> np.ndarray:
    """float32 row of integers / their sum, a power of two: it sums to 1 exactly."""
    weights = np.asarray(weights, np.float64)
    assert np.log2(weights.sum()).is_integer()
    return (weights / weights.sum()).astype(np.float32)


P3 = np.stack([dyadic([1, 2, 0, 5]), dyadic([4, 0, 2, 2]), dyadic([0, 1, 1, 6])])
Q3 = np.stack([dyadic([4, 2, 2, 0]), dyadic([1, 1, 1, 5]), dyadic([0, 4, 2, 2])])


# --- acceptance and the length law -------------------------------------------------------

def test_acceptance_probs_drawn_fixed_and_one_hot():
    assert acceptance_probs(P3, Q3) == pytest.approx([3 / 8, 4 / 8, 4 / 8], abs=1e-15)
    drafts = np.array([1, 0, 3])
    assert acceptance_probs(P3, Q3, drafts) == pytest.approx([1.0, 1.0, 1.0])
    assert acceptance_probs(P3, Q3, np.array([0, 1, 1])) == pytest.approx([0.25, 0.0, 0.25])
    assert acceptance_probs(P3, None, np.array([3, 0, 1])) == pytest.approx([5 / 8, 0.5, 1 / 8])
    assert acceptance_probs(P3, Q3) + rejection_probs(P3, Q3) == pytest.approx(1.0, abs=1e-15)


def test_acceptance_uses_the_values_as_given():
    """u q(d) < p(d) on the float32 values: an unnormalised q halves every ratio."""
    p, q = dyadic([1, 1]), dyadic([1, 1]) * 2
    assert acceptance_probs(p[None], q[None], np.array([0])) == pytest.approx([0.5])
    assert acceptance_probs(p[None], q[None]) == pytest.approx([0.5])


def test_a_draft_q_cannot_have_drawn_is_outside_the_law():
    with pytest.raises(ValueError, match="q\\(d\\) = 0 < p\\(d\\)"):
        acceptance_probs(P3[:1], Q3[:1], np.array([3]))
    assert acceptance_probs(P3[:1], Q3[:1], np.array([2])) == pytest.approx([0.0])  # 0 = 0


def test_length_law_is_the_product_of_acceptances():
    alphas = np.array([0.5, 0.25, 1.0, 0.75])
    law = acceptance_length_law(alphas)
    assert law.sum() == pytest.approx(1.0, abs=1e-15)
    tails = law[::-1].cumsum()[::-1]  # P(A >= j)
    assert tails == pytest.approx(np.concatenate([[1.0], np.cumprod(alphas)]), abs=1e-15)
    assert law == pytest.approx([0.5, 0.375, 0.0, 0.125 * 0.25, 0.125 * 0.75])
    assert acceptance_length_law(np.zeros(0)) == pytest.approx([1.0])


# --- residual, joint law, slot marginals -------------------------------------------------

def test_residual_and_its_support():
    assert residual(P3[0], Q3[0]) == pytest.approx([0, 0, 0, 1])
    assert residual(P3[1], None, 0) == pytest.approx([0, 0, 0.5, 0.5])
    assert (residual_support(P3[1], None, 0) == [False, False, True, True]).all()
    assert (residual_support(P3[2], Q3[2]) == [False, False, False, True]).all()
    with pytest.raises(ValueError, match="no mass"):
        residual(P3[0], P3[0])


def test_joint_law_sums_to_one_and_splits_by_length():
    law = joint_law(P3, Q3, bonus=2)
    assert law.shape == (4, 4) and law.sum() == pytest.approx(1.0, abs=1e-15)
    assert law.sum(axis=1) == pytest.approx(acceptance_length_law(acceptance_probs(P3, Q3)))
    assert law[3] == pytest.approx([0, 0, 3 / 8 * 4 / 8 * 4 / 8, 0])
    assert (law[0] > 0).tolist() == residual_support(P3[0], Q3[0]).tolist()


def test_fixed_draft_of_target_probability_zero_always_rejects():
    """p(d) = 0: A = 0 and Y ~ residual; later positions are never reached, and their
    laws are never built (position 1 has no residual and would raise)."""
    p = np.stack([dyadic([2, 2, 0, 0]), dyadic([1, 1, 1, 1])])
    q = np.stack([dyadic([1, 1, 2, 0]), dyadic([1, 1, 1, 1]) * np.float32(1.5)])
    law = joint_law(p, q, bonus=3, drafts=np.array([2, 0]))
    assert law[0] == pytest.approx([0.5, 0.5, 0, 0]) and not law[1:].any()
    reach, slots = slot_marginals(p, q, 3, np.array([2, 0]))
    assert reach == pytest.approx([1, 0, 0]) and slots[0] == pytest.approx([0.5, 0.5, 0, 0])
    assert not slots[1:].any()


def test_fixed_drafts_conditional_law():
    drafts = np.array([0, 2, 1])  # accept 1/4, 1, 1/4 (q one-hot: 1/8, 1/4, 1/8)
    law = joint_law(P3, Q3, bonus=1, drafts=drafts)
    assert law.sum(axis=1) == pytest.approx([0.75, 0, 0.25 * 0.75, 0.25 * 0.25])
    assert law[0] / 0.75 == pytest.approx(residual(P3[0], Q3[0]))
    one_hot = joint_law(P3, None, bonus=1, drafts=drafts)
    assert one_hot[0] == pytest.approx(7 / 8 * residual(P3[0], None, 0))
    assert one_hot[0] == pytest.approx([0, 2 / 8, 0, 5 / 8])


def test_no_rejection_means_no_residual_needed():
    equal = joint_law(P3, P3, bonus=0)  # p = q: every residual is empty, never built
    assert equal[3, 0] == 1.0 and equal.sum() == 1.0
    assert joint_law(P3[:0], Q3[:0], bonus=2).tolist() == [[0, 0, 1, 0]]


def test_slot_marginals_are_lossless_when_drafts_come_from_q():
    reach, law = slot_marginals(P3, Q3, bonus=1)
    assert reach == pytest.approx(np.concatenate([[1.0], np.cumprod([3 / 8, 4 / 8, 4 / 8])]))
    assert np.abs(law[:3] - P3).max() < 1e-12
    assert (law[3] == [0, 1, 0, 0]).all()


def test_slot_marginal_moves_by_at_most_the_row_sum_gap():
    """P != Q (float32 row sums): TV(law, p / P) <= |P - Q| / P."""
    p = P3[:1] * np.float32(0.999)
    _, law = slot_marginals(p, Q3[:1], bonus=0)
    tv = 0.5 * np.abs(law[0] - p[0] / p.sum()).sum()
    assert 0 < tv <= 0.001 / 0.999 + 1e-15


# --- greedy ------------------------------------------------------------------------------

def test_greedy_output_ties_mismatch_and_zero_drafts():
    target = np.stack([dyadic([1, 3, 3, 1]), dyadic([4, 1, 1, 2]), dyadic([1, 1, 1, 5])])
    assert greedy_output(target, [1, 0, 3], 9, 5).tolist() == [1, 0, 3, 9, -1]
    assert greedy_output(target, [2, 0, 3], 9, 4).tolist() == [1, -1, -1, -1]  # tie: lowest
    assert greedy_output(target, [1, 3, 3], 9, 4).tolist() == [1, 0, -1, -1]
    assert greedy_output(target[:0], [], 7, 3).tolist() == [7, -1, -1]
    with pytest.raises(ValueError, match="width"):
        greedy_output(target, [1, 0, 3], 9, 3)


# --- the batch description ---------------------------------------------------------------

def test_rejection_laws_helpers():
    laws = RejectionLaws(np.concatenate([P3, P3[:1]]), np.concatenate([Q3, Q3[:1]]),
                         (2, 0, 2), np.array([0, 1, 2]), np.array([False, True, False]))
    assert laws.batch == 3 and laws.vocab == 4 and laws.offsets.tolist() == [0, 2, 2, 4]
    target, draft, fixed, bonus, greedy = laws.request(2)
    assert (target == np.stack([P3[2], P3[0]])).all() and fixed is None
    assert bonus == 2 and not greedy and draft.shape == (2, 4)
    twice = laws.replicate(2)
    assert twice.num_draft_tokens == (2, 0, 2) * 2 and twice.bonus.tolist() == [0, 1, 2] * 2
    assert (twice.request(5)[0] == target).all() and twice.request(4)[4]
    with pytest.raises(ValueError, match="fixed"):
        RejectionLaws(P3, None, (3,), np.array([0]), np.array([False]))


def test_draw_drafts_follows_q_and_never_draws_q_zero():
    q = np.stack([dyadic([0, 1, 0, 3]), dyadic([2, 0, 0, 0]), dyadic([0, 0, 0, 1])])
    laws = RejectionLaws(P3, q, (3,), np.array([0]), np.array([False]))
    rng, runs = np.random.default_rng(1), 20000
    drawn = np.stack([laws.draw_drafts(rng) for _ in range(runs)])
    assert (drawn[:, 1] == 0).all() and (drawn[:, 2] == 3).all()
    ones = int((drawn[:, 0] == 1).sum())
    assert set(np.unique(drawn[:, 0])) <= {1, 3}
    assert stats.binomtest(ones, runs, 0.25).pvalue > LEVEL
    fixed = RejectionLaws(P3, None, (3,), np.array([0]), np.array([False]), np.array([1, 2, 3]))
    assert fixed.draw_drafts(rng).tolist() == [1, 2, 3]


# --- Monte Carlo against the textbook algorithm ------------------------------------------

def simulate(target, draft, bonus, runs, rng, drafts=None) -> np.ndarray:
    """Counts [n + 1, V] of (A, Y) from the textbook algorithm, vectorised over runs."""
    p = target.astype(np.float64)
    n, vocab = p.shape
    q = np.zeros_like(p) if draft is None else draft.astype(np.float64)
    length, emitted = np.full(runs, n), np.full(runs, bonus)
    alive = np.ones(runs, bool)
    for i in range(n):
        d = (rng.choice(vocab, size=runs, p=q[i] / q[i].sum()) if drafts is None
             else np.full(runs, drafts[i]))
        q_i = q[i] if draft is not None else np.eye(vocab)[drafts[i]]
        rejected = alive & ~(rng.random(runs) * q_i[d] < p[i, d])
        if rejected.any():
            left = np.maximum(p[i] - q_i, 0)
            emitted[rejected] = rng.choice(vocab, size=int(rejected.sum()), p=left / left.sum())
        length[rejected], alive = i, alive & ~rejected
    counts = np.zeros((n + 1, vocab), np.int64)
    np.add.at(counts, (length, emitted), 1)
    return counts


def fits(counts: np.ndarray, law: np.ndarray) -> float:
    """Pearson p-value of counts against law (cells expecting < 5 pooled); 0 if a cell of
    probability 0 was observed."""
    counts, law = counts.ravel(), law.ravel()
    if counts[law <= 0].any():
        return 0.0
    expected = law * counts.sum()
    big = expected >= 5
    obs = np.append(counts[big], counts[~big & (law > 0)].sum())
    exp = np.append(expected[big], expected[~big & (law > 0)].sum())
    keep = exp > 0
    return float(stats.chisquare(obs[keep], exp[keep] * obs.sum() / exp[keep].sum()).pvalue)


@pytest.mark.parametrize("fixed, with_q", [(False, True), (True, True), (True, False)])
def test_joint_law_matches_a_textbook_simulation(fixed, with_q):
    rng = np.random.default_rng(20240)
    vocab, n, runs = 6, 3, 200_000
    target = np.stack([normalised(rng.random(vocab) ** 2) for _ in range(n)])
    draft = np.stack([normalised(rng.random(vocab) ** 2) for _ in range(n)])
    target[1, 4] = 0.0  # a token q proposes and p never emits
    drafts = np.array([0, 4, 2]) if fixed else None
    q = draft if with_q else None
    law = joint_law(target, q, 5, drafts)
    counts = simulate(target, q, 5, runs, rng, drafts)
    assert fits(counts, law) > LEVEL
    everything = int(counts[n].sum())
    assert stats.binomtest(everything, runs, law[n].sum()).pvalue > LEVEL


# --- the strategies ----------------------------------------------------------------------

def test_draft_counts_reach_all_zero_and_zero_in_the_middle():
    none = find(draft_counts(4, 3), lambda c: not any(c), settings=SETTINGS)
    middle = find(draft_counts(4, 3), lambda c: len(c) == 3 and c[1] == 0 and c[0] and c[2],
                  settings=SETTINGS)
    assert none == [0] and middle[1] == 0


@pytest.mark.parametrize("kind", LAW_KINDS)
def test_each_law_kind_is_what_it_says(kind):
    rng = np.random.default_rng(7)
    for vocab in (2, 3, 33):
        p0 = normalised(rng.random(vocab) + 0.1)
        q0 = normalised(rng.random(vocab) + 0.1)
        p, q = pair_of_kind(kind, p0, q0, rng, 1e-4)
        assert p.dtype == q.dtype == np.float32
        if kind == "equal":
            assert (p == q).all()
        if kind == "near-equal":
            assert np.abs(q.astype(np.float64) / p - 1).max() < 1e-3 and (p != q).any()
        if kind == "q-mass-where-p-has-none":
            assert ((p == 0) & (q > 0)).any()
        if kind == "p-zeros":
            assert (p == 0).any() and 1 <= (p > 0).sum() <= 8
        if kind == "ties":
            assert (p == p.max()).sum() >= 2
        if kind == "one-hot":
            assert (p == 1).sum() == 1 and (p > 0).sum() == 1


def test_fixed_draft_choices():
    p, q = dyadic([0, 3, 1, 3, 1, 0, 0, 0]), dyadic([1, 1, 0, 1, 1, 0, 0, 4])
    rng = np.random.default_rng(0)
    picks = {c: choose_draft(c, p, q, rng) for c in DRAFT_CHOICES}
    assert picks["p-zero"] in (0, 7) and picks["tiny"] == 4
    assert picks["argmax"] == 1 and picks["tie"] == 3 and q[picks["random"]] > 0
    assert choose_draft("p-zero", p, None, rng) in (0, 5, 6, 7)
    assert choose_draft("tiny", p, None, rng) == 2


def rows_are_probs(table: np.ndarray) -> bool:
    sums = table.astype(np.float64).sum(axis=1)
    return (table.dtype == np.float32 and np.isfinite(table).all() and (table >= 0).all()
            and (np.abs(sums - 1) < 1e-5).all() and (table > 0).any(axis=1).all())


def check_inside_the_contract(laws: RejectionLaws):
    """The strategy's promises, and the reference's laws on them (no error, mass 1)."""
    assert rows_are_probs(laws.target) and laws.bonus.dtype == np.int64
    assert ((laws.bonus >= 0) & (laws.bonus < laws.vocab)).all()
    assert laws.draft is None or rows_are_probs(laws.draft)
    width = max(laws.num_draft_tokens, default=0) + 1
    for b in range(laws.batch):
        target, draft, fixed, bonus, _ = laws.request(b)
        for i in range(len(target)):
            q = None if draft is None else draft[i]
            d = None if fixed is None else int(fixed[i])
            if q is not None:
                assert residual_possible(target[i], q)
                assert d is None or q[d] > 0
            else:
                assert target[i, d] >= 1 or np.delete(target[i], d).any()
        assert joint_law(target, draft, bonus, fixed).sum() == pytest.approx(1, abs=1e-12)
        reach, law = slot_marginals(target, draft, bonus, fixed)
        assert law[reach > 0].sum(axis=1) == pytest.approx(1, abs=1e-12)
        if fixed is None:  # lossless up to the row sums' float32 rounding
            tv = 0.5 * np.abs(law[:-1] - target / target.sum(axis=1, keepdims=True)).sum(1)
            assert (tv[reach[:-1] > 0] <= 1e-5).all()
        drafts = laws.draw_drafts(np.random.default_rng(b))[laws.offsets[b]:laws.offsets[b + 1]]
        assert len(greedy_output(target, drafts, bonus, width)) == width


@SETTINGS
@given(laws=rejection_laws(max_batch=6, max_drafts=5, max_vocab=300, drafted=True))
def test_drafted_batches_are_inside_the_contract(laws):
    assert laws.fixed_drafts is None and laws.draft is not None
    check_inside_the_contract(laws)


@SETTINGS
@given(with_q=st.sampled_from([True, False, None]), data=st.data())
def test_fixed_draft_batches_are_inside_the_contract(with_q, data):
    laws = data.draw(rejection_laws(max_batch=6, max_drafts=5, max_vocab=300, drafted=False,
                                    with_draft_probs=with_q))
    assert laws.fixed_drafts is not None and laws.fixed_drafts.dtype == np.int64
    assert (laws.draft is None) == (with_q is False) or with_q is None
    check_inside_the_contract(laws)


@SETTINGS
@given(pair=st.sampled_from([2, 3, 129, 2049]).flatmap(law_pairs))
def test_law_pairs_have_a_residual_wherever_they_reject(pair):
    p, q = pair
    assert rows_are_probs(np.stack([p, q])) and residual_possible(p, q)
    if (q > p).any():
        assert residual(p, q).sum() == pytest.approx(1.0)
