"""The float64 reference of families ``logprobs`` and ``sample-logits`` (reference/processed,
reference/logprobs)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sampling_harness.reference.logprobs import (
    logprob_tolerance,
    logprobs,
    mode_bounds,
    mode_values,
    tme,
)
from sampling_harness.reference.processed import (
    U32,
    division_roundings,
    exact_logits,
    process,
    processed_logits,
    processed_probs,
)

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, database=None)
NEG = -np.inf


def logits_of(probs) -> np.ndarray:
    """One float64 row whose softmax is ``probs`` (0 -> -inf)."""
    with np.errstate(divide="ignore"):
        return np.log(np.asarray([probs], dtype=np.float64))


def kept(values) -> list:
    return np.isfinite(values[0]).tolist()



def test_exact_logits_upcast_from_their_own_values():
    assert exact_logits(torch.tensor([[0.1]], dtype=torch.bfloat16))[0, 0] == 0.10009765625
    assert exact_logits(torch.tensor([[0.1]], dtype=torch.float16))[0, 0] == 0.0999755859375
    assert exact_logits(torch.tensor([[0.1]]))[0, 0] == float(np.float32(0.1))
    row = exact_logits(torch.tensor([[1.0, float("-inf")]], dtype=torch.bfloat16))
    assert row.dtype == np.float64 and row[0, 1] == NEG
    with pytest.raises(TypeError):
        exact_logits(torch.zeros(1, 2, dtype=torch.float64))
    with pytest.raises(ValueError):
        exact_logits(torch.zeros(3))


def test_bf16_input_is_processed_from_its_bf16_values():
    x = torch.tensor([[0.1, 0.3, -1.7]], dtype=torch.bfloat16)
    values, _ = processed_logits(x, 1.0, 0, 1.0)
    assert np.array_equal(values, x.double().numpy())
    raw, _, _ = mode_values(x, "raw_logits", 1.0, 0, 1.0, np.array([[0, 1, 2]]))
    assert np.array_equal(raw, x.double().numpy())



def test_temperature_divides_by_its_float32_value_in_float64():
    x = np.array([[1.0, 2.0, -3.0]])
    values, _ = processed_logits(x, 0.7, 0, 1.0)
    assert np.array_equal(values, x / float(np.float32(0.7)))


def test_temperature_zero_rows_are_unscaled():
    x = np.array([[1.0, 2.0, -3.0], [1.0, 2.0, -3.0]])
    values, _ = processed_logits(x, torch.tensor([0.0, 2.0]), 0, 1.0)
    assert np.array_equal(values[0], x[0]) and np.array_equal(values[1], x[1] / 2)
    assert division_roundings([0.0, 1.0, 2.0, 0.7]).tolist() == [0, 0, 2, 2]
    with pytest.raises(ValueError):
        processed_logits(np.zeros((1, 3)), -1.0, 0, 1.0)



def test_top_k_keeps_ties_at_the_boundary():
    values, amb = processed_logits(np.array([[5.0, 4.0, 3.0, 4.0, 1.0]]), 1.0, 2, 1.0)
    assert kept(values) == [True, True, False, True, False] and not amb.any()
    values, _ = processed_logits(np.array([[2.0, 7.0, 7.0, 7.0]]), 1.0, 1, 1.0)
    assert kept(values) == [False, True, True, True]


@pytest.mark.parametrize("k", [-3, 0, 4, 5, 100])
def test_top_k_disabled_for_k_outside_1_to_V_minus_1(k):
    values, _ = processed_logits(np.array([[5.0, 4.0, 3.0, 1.0]]), 1.0, k, 1.0)
    assert all(kept(values))


def test_top_k_with_fewer_finite_entries_than_k_keeps_the_finite_ones():
    values, amb = processed_logits(np.array([[0.0, NEG, NEG, 1.0]]), 1.0, 3, 1.0)
    assert kept(values) == [True, False, False, True] and not amb.any()


def test_top_k_flags_entries_float32_division_can_tie_with_the_boundary():
    below = float(np.nextafter(np.float32(1.0), np.float32(0.0)))
    x = np.array([[3.0, 1.0, below, 0.5]])
    values, amb = processed_logits(x, 3.0, 2, 1.0)
    assert kept(values) == [True, True, False, False]
    assert amb[0].tolist() == [False, False, True, False]



def test_top_p_keeps_the_token_that_crosses_the_threshold():
    x = logits_of([0.5, 0.25, 0.15, 0.1])
    for top_p, expect in [(0.6, [1, 1, 0, 0]), (0.8, [1, 1, 1, 0]), (0.3, [1, 0, 0, 0])]:
        values, amb = processed_logits(x, 1.0, 0, top_p)
        assert kept(values) == [bool(e) for e in expect] and not amb.any()


@pytest.mark.parametrize("top_p", [0.0, -1.0, 1e-9])
def test_top_p_always_keeps_the_most_probable(top_p):
    values, _ = processed_logits(logits_of([0.2, 0.5, 0.3]), 1.0, 0, top_p)
    assert kept(values) == [False, True, False]


@pytest.mark.parametrize("top_p", [1.0, 1.5])
def test_top_p_at_or_above_one_disables(top_p):
    values, amb = processed_logits(logits_of([0.9, 0.1 - 1e-12, 1e-12]), 1.0, 0, top_p)
    assert all(kept(values)) and not amb.any()


def test_top_p_applies_to_the_top_k_renormalised_law():
    x = logits_of([0.4, 0.3, 0.2, 0.1])
    assert kept(processed_logits(x, 1.0, 0, 0.5)[0]) == [True, True, False, False]
    assert kept(processed_logits(x, 1.0, 2, 0.5)[0]) == [True, False, False, False]


def test_top_p_tie_straddling_the_boundary_is_ambiguous():
    values, amb = processed_logits(np.array([[3.0, 2.0, 2.0, 2.0, 1.0]]), 1.0, 0, 0.5)
    assert kept(values) == [True, True, False, False, False]  # lowest index first
    assert amb[0].tolist() == [False, True, True, True, False]


def test_top_p_tie_wholly_inside_is_not_ambiguous():
    values, amb = processed_logits(np.array([[3.0, 2.0, 2.0, 2.0, -5.0]]), 1.0, 0, 0.99)
    assert kept(values) == [True, True, True, True, False] and not amb.any()


def test_top_p_cumulative_sum_within_rounding_of_the_threshold_is_ambiguous():
    x = logits_of([0.5, 0.3, 0.2])
    top_p = np.float32(0.8)  # 0.800000011920929: the mass before token 2 is 0.8
    assert abs(0.8 - float(top_p)) < 2 * 3 * U32
    _, amb = processed_logits(x, 1.0, 0, top_p)
    assert amb[0].tolist() == [False, False, True]
    _, amb = processed_logits(x, 1.0, 0, 0.79)
    assert not amb.any()


def test_sum_terms_bound_grows_with_the_vocabulary():
    big = np.full((1, 4000), -30.0)
    big[0, :3] = np.log([0.5, 0.3, 0.2 - 3997 * np.exp(-30.0)])
    near = float(np.float32(0.8 - 1e-4))
    assert process(big, 1.0, 0, near).ambiguous[0, 2]  # eps ~ 2 * 4000 u = 4.8e-4
    assert not process(big, 1.0, 0, near, sum_terms=12).ambiguous[0, 2]



def test_logprobs_keeps_minus_inf_and_normalises_over_finite_entries():
    lp = logprobs(np.array([[0.0, NEG, np.log(3.0)]]))
    assert lp[0, 1] == NEG and np.allclose(np.exp(lp[0, [0, 2]]), [0.25, 0.75], rtol=1e-15)
    with pytest.raises(ValueError):
        logprobs(np.array([[NEG, NEG]]))


def test_raw_logprobs_are_raw_logits_minus_logsumexp():
    x = np.array([[1.5, -2.0, 7.25, NEG, 7.25]])
    ids = np.array([[2, 0, 3, -1]])
    raw, _, _ = mode_values(x, "raw_logits", 1.0, 0, 1.0, ids)
    lp, _, _ = mode_values(x, "raw_logprobs", 1.0, 0, 1.0, ids)
    finite = np.isfinite(raw)
    assert np.allclose(lp[finite], raw[finite] - logsumexp(x[np.isfinite(x)]), rtol=0,
                       atol=1e-14)
    assert (lp[~finite] == NEG).all()


def test_ranks_count_ties_and_padding_is_minus_inf():
    x = np.array([[1.0, 3.0, 3.0, 2.0, NEG]])
    ids = np.array([[1, 2, 3, 0, 4, -1]])
    values, ranks, amb = mode_values(x, "raw_logprobs", 1.0, 0, 1.0, ids)
    assert ranks[0].tolist() == [2, 2, 3, 4, 5, -1]
    assert values[0, 5] == NEG and values[0, 4] == NEG and not amb.any()


def test_processed_ranks_of_masked_tokens_are_V():
    x = np.array([[1.0, 3.0, 3.0, 2.0]])
    _, ranks, _ = mode_values(x, "processed_logits", 1.0, 2, 1.0, np.array([[0, 3, 1]]))
    assert ranks[0].tolist() == [4, 4, 2]


def test_processed_logprobs_renormalise_over_the_kept_set():
    x = logits_of([0.4, 0.3, 0.2, 0.1])
    values, _, _ = mode_values(x, "processed_logprobs", 1.0, 2, 1.0, np.array([[0, 1, 2]]))
    assert np.allclose(np.exp(values[0, :2]), [4 / 7, 3 / 7], rtol=1e-14)
    assert values[0, 2] == NEG


@pytest.mark.parametrize("mode,token", [("raw_logits", 3), ("raw_logits", -2), ("logits", 0)])
def test_bad_ids_and_modes_are_rejected(mode, token):
    with pytest.raises(ValueError):
        mode_values(np.zeros((1, 3)), mode, 1.0, 0, 1.0, np.array([[token]]))


def test_mode_bounds_of_an_ambiguous_tie_cover_both_resolutions():
    x = np.array([[3.0, 2.0, 2.0, 2.0, 1.0]])
    ids = np.array([[0, 1, 3, 4]])
    b = mode_bounds(x, "processed_logprobs", 1.0, 0, 0.5, ids)
    # token 0 alone, or with one, two or three of the tied tokens
    for kept_ties in range(4):
        lp0 = 3.0 - np.log(np.exp(3.0) + kept_ties * np.exp(2.0))
        assert b.low[0, 0] <= lp0 <= b.high[0, 0]
    assert b.low[0, 1] == NEG and b.high[0, 1] == pytest.approx(2 - np.logaddexp(3, 2))
    assert b.rank_low[0].tolist()[::3] == [1, 5] and b.rank_high[0, 1] == 5
    assert b.low[0, 3] == b.high[0, 3] == NEG



def test_processed_probs_greedy_rows_are_one_hot_at_the_lowest_argmax():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [1.0, 3.0, 3.0, 2.0]])
    law = processed_probs(x, torch.tensor([0.0, 1.0]), 0, 1.0)
    assert law.probs[0].tolist() == [0, 1, 0, 0] and not law.ambiguous[0].any()
    assert np.allclose(law.probs[1], np.exp(x[1]) / np.exp(x[1]).sum(), rtol=1e-14)


def test_processed_probs_reports_the_law_with_ambiguous_tokens_in_and_out():
    x = np.array([[3.0, 2.0, 2.0, 2.0, 1.0]])
    law = processed_probs(x, 1.0, 0, 0.5)
    assert law.certain[0].tolist() == [1, 0, 0, 0, 0]
    w = np.exp([3.0, 2.0, 2.0, 2.0])
    assert np.allclose(law.inclusive[0, :4], w / w.sum(), rtol=1e-14)
    assert law.inclusive[0, 4] == 0
    assert np.allclose(law.probs[0, :2], w[:2] / w[:2].sum(), rtol=1e-14)



def test_tme_of_identical_values_is_one_and_grows_with_the_error():
    ref = np.array([[-1.0, NEG, -2.0]])
    assert tme(ref, ref) == 1.0
    moved = ref + np.array([[0.5, 0.0, 0.0]])
    assert tme(moved, ref) == pytest.approx((np.exp(0.5) + 2) / 3)
    ids = np.array([[0, -1, 2]])
    assert tme(moved, ref, ids) == pytest.approx((np.exp(0.5) + 1) / 2)
    assert tme(np.array([[np.nan, NEG, -2.0]]), ref) == np.inf
    assert tme(torch.tensor([[-1.0, 0.0, -2.0]]), ref) == np.inf


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_logprob_tolerance_bounds_float32_log_softmax_and_rejects_bf16(dtype):
    gen = torch.Generator().manual_seed(6)
    x = (torch.randn(8, 3001, generator=gen) * torch.tensor([0.1, 1, 3, 10, 30, 1, 5, 50])[
        :, None]).to(dtype)
    x[1, ::7] = float("-inf")
    exact = exact_logits(x)
    ref = logprobs(exact)
    tol = logprob_tolerance(torch.float32, exact)
    got = torch.log_softmax(x.float(), dim=1).double().numpy()
    finite = np.isfinite(ref)
    assert (np.abs(got[finite] - ref[finite]) <= tol[finite]).all()
    assert (got[~finite] == NEG).all()
    assert tme(got, ref) <= np.mean(np.exp(tol))
    in_bf16 = torch.log_softmax(x.bfloat16(), dim=1).double().numpy()
    assert (np.abs(in_bf16[finite] - ref[finite]) > tol[finite]).mean() > 0.5


def test_logprob_tolerance_follows_the_division_roundings():
    z = np.array([[10.0, -20.0, 0.0]])
    plain = logprob_tolerance(torch.float32, z)
    scaled = logprob_tolerance(torch.float32, z, roundings=2)
    assert (scaled > plain).all()
    assert logprob_tolerance(torch.float32, np.array([[0.0, NEG]]))[0, 1] == 0


values_pool = st.sampled_from([-3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.0, 2.5, NEG])


@st.composite
def cases(draw, max_vocab=10):
    vocab = draw(st.integers(1, max_vocab))
    row = draw(st.lists(values_pool, min_size=vocab, max_size=vocab))
    if not np.isfinite(row).any():
        row[draw(st.integers(0, vocab - 1))] = draw(st.sampled_from([-1.0, 0.0, 2.0]))
    temperature = draw(st.sampled_from([0.0, 0.5, 1.0, 0.7, 2.0]))
    top_k = draw(st.integers(-1, vocab + 1))
    top_p = draw(st.sampled_from([0.0, 0.3, 0.5, 0.77, 0.9, 0.999, 1.0, 1.5]))
    return np.array([row]), temperature, top_k, top_p


@SETTINGS
@given(cases())
def test_kept_lies_between_certain_and_possible(case):
    x, t, k, p = case
    proc = process(x, t, k, p)
    assert (proc.certain <= proc.kept).all() and (proc.kept <= proc.possible).all()
    assert proc.kept[0, np.argmax(proc.scaled[0])]
    assert not proc.possible[~np.isfinite(x)].any()
    values = proc.values
    assert np.array_equal(values[proc.kept], proc.scaled[proc.kept])
    assert (values[~proc.kept] == NEG).all()


@SETTINGS
@given(cases(), st.randoms(use_true_random=False))
def test_certain_and_possible_do_not_depend_on_column_order(case, rnd):
    x, t, k, p = case
    perm = np.array(rnd.sample(range(x.shape[1]), x.shape[1]))
    proc, moved = process(x, t, k, p), process(x[:, perm], t, k, p)
    assert np.array_equal(proc.certain[:, perm], moved.certain)
    assert np.array_equal(proc.possible[:, perm], moved.possible)


@SETTINGS
@given(cases(), st.floats(0, 1), st.floats(0, 1))
def test_kept_set_grows_with_top_p(case, p1, p2):
    x, t, k, _ = case
    small, large = sorted([float(np.float32(p1)), float(np.float32(p2))])
    assert (process(x, t, k, small).kept <= process(x, t, k, large).kept).all()


@SETTINGS
@given(st.integers(1, 9), st.integers(-1, 10), st.floats(0, 1.2), st.integers(0, 2**32 - 1))
def test_unambiguous_decisions_match_the_definition(vocab, k, top_p, seed):
    # distinct values: top-k is a threshold, top-p keeps t iff the mass above it < top_p
    x = np.random.default_rng(seed).permutation(np.arange(vocab) * 0.37 - 1.0)[None, :]
    proc = process(x, 1.0, k, top_p)
    top_k = np.ones(vocab, bool) if k <= 0 or k >= vocab else x[0] >= np.sort(x[0])[-k]
    w = np.where(top_k, np.exp(x[0]), 0.0)
    p = w / w.sum()
    above = np.array([p[x[0] > v].sum() for v in x[0]])
    expect = top_k & ((above < np.float32(top_p)) | (above == 0) | (np.float32(top_p) >= 1))
    clear = ~proc.ambiguous[0]
    assert np.array_equal(proc.kept[0][clear], expect[clear])


@SETTINGS
@given(cases(), st.sampled_from(
    ["raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits"]),
    st.data())
def test_mode_values_ranks_and_bounds(case, mode, data):
    x, t, k, p = case
    vocab = x.shape[1]
    ids = np.array([data.draw(st.lists(st.integers(-1, vocab - 1), min_size=1, max_size=6))])
    values, ranks, amb = mode_values(x, mode, t, k, p, ids)
    proc = process(x, t, k, p)
    keys = x[0] if mode.startswith("raw") else proc.values[0]
    for j, tok in enumerate(ids[0]):
        if tok == -1:
            assert values[0, j] == NEG and ranks[0, j] == -1 and not amb[0, j]
            continue
        assert ranks[0, j] == (keys >= keys[tok]).sum()
    b = mode_bounds(x, mode, t, k, p, ids)
    slack = 1e-12  # the bounds and the values are float64 sums taken in different orders
    assert (b.low <= values + slack).all() and (values <= b.high + slack).all()
    assert (b.rank_low <= ranks).all() and (ranks <= b.rank_high).all()
    if mode == "raw_logprobs":
        raw, _, _ = mode_values(x, "raw_logits", t, k, p, ids)
        finite = np.isfinite(raw)
        assert np.allclose(values[finite], raw[finite] - logsumexp(x[np.isfinite(x)]),
                           rtol=0, atol=1e-13)


@SETTINGS
@given(cases())
def test_processed_probs_are_laws_on_the_right_supports(case):
    x, t, k, p = case
    law = processed_probs(x, t, k, p)
    proc = process(x, t, k, p)
    for probs in (law.probs, law.inclusive):
        assert np.allclose(probs.sum(axis=1), 1.0, rtol=1e-14)
    assert ((law.certain > 0) <= (law.probs > 0)).all()
    assert ((law.probs > 0) <= (law.inclusive > 0)).all()
    if t == 0:
        assert law.probs[0, np.argmax(x[0])] == 1
    else:
        assert np.array_equal(law.probs[0] > 0, proc.kept[0])


def float32_kept(x, temperature, top_k, top_p, complement):
    """A float32 kernel's kept mask for one row: z = x / T, top-k on z (ties kept), then
    top-p by a descending exclusive cumsum (< top_p) or, with ``complement``, an ascending
    inclusive cumsum (masked where <= 1 - top_p, the first always kept)."""
    z = torch.tensor(x, dtype=torch.float32)
    t = torch.tensor(temperature, dtype=torch.float32)
    z = z if temperature == 0 else z / t
    vocab = z.numel()
    keep = torch.isfinite(z)
    if 0 < top_k < vocab:
        keep &= z >= torch.sort(z, descending=True).values[top_k - 1]
    if np.float32(top_p) >= 1:
        return keep.numpy()
    probs = torch.softmax(torch.where(keep, z, -torch.inf), dim=0)
    p32 = torch.tensor(top_p, dtype=torch.float32)
    if complement:
        up = torch.sort(probs, stable=True)
        mask_sorted = torch.cumsum(up.values, 0) <= 1 - p32
        mask_sorted[-1] = False
        dropped = torch.zeros(vocab, dtype=torch.bool)
        dropped[up.indices] = mask_sorted
    else:
        down = torch.sort(probs, descending=True, stable=True)
        before = torch.cumsum(down.values, 0) - down.values
        mask_sorted = before >= p32
        mask_sorted[0] = False
        dropped = torch.zeros(vocab, dtype=torch.bool)
        dropped[down.indices] = mask_sorted
    return (keep & ~dropped).numpy()


@st.composite
def near_boundary_cases(draw):
    """float32 rows with clusters of adjacent values and top_p placed on a prefix mass."""
    vocab = draw(st.integers(2, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    base = rng.normal(0, draw(st.sampled_from([0.5, 2.0, 8.0])), vocab).astype(np.float32)
    ulps = rng.integers(0, 3, vocab)
    anchor = base[rng.integers(0, vocab, vocab)]
    x = np.where(rng.random(vocab) < 0.5, anchor, base)
    for _ in range(3):
        x = np.where(ulps > 0, np.nextafter(x, np.float32(np.inf)), x)
        ulps = ulps - 1
    temperature = draw(st.sampled_from([0.0, 1.0, 0.7, 1.3]))
    top_k = draw(st.integers(0, vocab))
    z = x.astype(np.float64) / (temperature or 1.0)
    p = np.exp(z - z.max())
    p /= p.sum()
    prefix = np.cumsum(np.sort(p)[::-1])
    top_p = float(np.float32(prefix[draw(st.integers(0, vocab - 1))]))
    return x.astype(np.float64)[None, :], temperature, top_k, top_p


@SETTINGS
@given(near_boundary_cases(), st.booleans())
def test_float32_kernels_land_between_certain_and_possible(case, complement):
    x, t, k, p = case
    proc = process(x, t, k, p)
    got = float32_kept(x[0], t, k, p, complement)
    assert (proc.certain[0] <= got).all() and (got <= proc.possible[0]).all()


def test_min_p_keeps_tokens_at_least_min_p_of_the_max_ties_kept():
    x = logits_of([0.4, 0.2, 0.2, 0.1, 0.1])
    proc = process(x, 1.0, 0, 1.0, min_p=0.45)
    assert proc.kept[0].tolist() == [True, True, True, False, False]
    assert not proc.ambiguous.any()
    assert process(x, 1.0, 0, 1.0, min_p=0.0).kept.all()
    tied = np.array([[2.0, 2.0, 1.0]])
    assert process(tied, 1.0, 0, 1.0, min_p=1.0).certain[0].tolist() == [True, True, False]


def test_min_p_runs_on_the_scaled_logits_before_top_p():
    z = np.array([[0.0, -1.0, -2.0, -2.2]])
    assert process(0.7 * z, 0.7, 0, 1.0, min_p=0.15).kept[0].tolist() == [
        True, True, False, False]
    # min-p first leaves 0.5, 0.3 (renormalised 0.625, 0.375): top-p 0.6 keeps the head
    x = logits_of([0.5, 0.3, 0.1, 0.1])
    assert process(x, 1.0, 0, 0.6, min_p=0.25).kept[0].tolist() == [True, False, False, False]
    assert process(x, 1.0, 0, 0.6).kept[0].tolist() == [True, True, False, False]


def test_min_p_threshold_within_float32_rounding_is_ambiguous():
    x = logits_of([0.5, 0.1, 0.4])  # 0.1 = 0.2 * 0.5 exactly at the threshold
    proc = process(x, 1.0, 0, 1.0, min_p=0.2)
    assert proc.ambiguous[0].tolist() == [False, True, False]
    with pytest.raises(ValueError, match="min_p"):
        process(x, 1.0, 0, 1.0, min_p=1.5)


@SETTINGS
@given(cases(), st.sampled_from([0.0, 1e-3, 0.1, 0.3, 0.5, 0.9, 1.0]))
def test_min_p_kept_lies_between_certain_and_possible(case, min_p):
    x, t, k, p = case
    proc = process(x, t, k, p, min_p=min_p)
    assert (proc.certain <= proc.kept).all() and (proc.kept <= proc.possible).all()
    assert proc.kept[0, np.argmax(proc.scaled[0])]
    plain = process(x, t, k, p)
    z, m = proc.scaled[0], proc.scaled[0].max()
    clear = ~proc.ambiguous[0] & ~plain.ambiguous[0]
    # below the min-p threshold nothing is kept; top-k alone (top_p 1) only intersects
    below = np.isfinite(z) & (z - m < np.log(min_p) if min_p > 0 else np.zeros_like(z, bool))
    assert not proc.kept[0][below & clear].any()
    if p >= 1:
        assert np.array_equal(proc.kept[0][clear], (plain.kept[0] & ~below)[clear])
