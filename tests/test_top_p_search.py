"""The whole-row top-p search of triton-sample-logits' fallback
(kernels/sample_logits/triton_top_p_search.py): its copy of a narrowed range to scratch,
taken, never taken, or overflowing the scratch, draws the ids of a sort."""

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from sampling_harness.kernels.sample_logits.triton_top_p_search import row_top_p_key
from tests.test_sample_logits_kernels import nucleus_rows, sorted_race

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter tests")


def copies_seen(monkeypatch) -> list:
    """Each copy the search makes, as the counts of its rows (open rows only matter)."""
    import sampling_harness.kernels.sample_logits.triton_top_p_search as search
    seen, copy = [], search.copy_range

    def spy(*args):
        n = copy(*args)
        seen.append(np.asarray(n.handle.data).copy())
        return n

    monkeypatch.setattr(search, "copy_range", spy)
    return seen


@pytest.fixture
def whole_rows(monkeypatch) -> dict:
    """nucleus_rows of 5000 columns (more than the scratch's CAP), every row sent to the
    fallback (KMAX = 0), the flat and peaked rows' top-p sets a few thousand wide."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    monkeypatch.setattr(race, "KMAX", 0)
    inputs = nucleus_rows(vocab=5000)
    inputs["top_k"][6] = 3000                                 # top-k then top-p, in the search
    return inputs


def draws(inputs, seeds=range(2)) -> list:
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    return [race.sample_logits_triton(**inputs, seed=seed) for seed in seeds]


def test_the_copied_range_draws_the_ids_of_the_whole_row_and_a_sort(monkeypatch, whole_rows):
    """At the defaults the search copies its range once it fits (and then searches the
    copy); never copying (COPY_WHEN 0) draws the same ids, and both draw ``sorted_race``'s."""
    import sampling_harness.kernels.sample_logits.triton_top_p_search as search
    seen = copies_seen(monkeypatch)
    copied = draws(whole_rows)
    assert seen and all(n.max() <= search.CAP for n in seen), seen
    assert max(n.max() for n in seen) > 100, "the copies hold a few entries: weak data"
    monkeypatch.setattr(search, "COPY_WHEN", tl.constexpr(0.0))
    seen.clear()
    whole = draws(whole_rows)
    assert not seen
    for seed, (a, b) in enumerate(zip(copied, whole, strict=True)):
        assert torch.equal(a, b), (a != b).nonzero()[:, 0].tolist()
        assert torch.equal(a, sorted_race(**whole_rows, seed=seed))


@triton.jit
def _top_p_keys(logits_ptr, cand_ptr, kth_ptr, t_ptr, p_ptr, out_ptr, B, V, copy_rows,
                BLOCK_R: tl.constexpr, BLOCK: tl.constexpr):
    """c's key of each row, by ``row_top_p_key`` (one tile of BLOCK a search step; rows
    below ``copy_rows`` have scratch)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    ok = rows < B
    kth = tl.load(kth_ptr + rows, mask=ok, other=0)
    t = tl.load(t_ptr + rows, mask=ok, other=1.0)
    p = tl.load(p_ptr + rows, mask=ok, other=1.0)
    key = row_top_p_key(logits_ptr, cand_ptr, rows.to(tl.int64), ok, V, V, kth, t, p,
                        rows < copy_rows, BLOCK, BLOCK, 1)
    tl.store(out_ptr + rows, key, mask=ok)


def ordered_keys(x: np.ndarray) -> np.ndarray:
    """The order-preserving int32 keys of float32 values (-0.0 as +0.0)."""
    bits = np.where(x == 0, np.float32(0), x).astype(np.float32).view(np.int32)
    return np.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)


def top_p_key(x: np.ndarray, kth: int, t: float, top_p: float) -> int:
    """c by a sort: the smallest kept key whose strictly greater mass, a float64 sum of the
    float32 weights exp(x / T - top / T), is below top_p W."""
    keys = ordered_keys(x)
    kept = np.isfinite(x) & (keys >= kth)
    z = (x[kept] / np.float32(t)).astype(np.float32)
    w = np.exp(z - np.float32(x[kept].max() / np.float32(t))).astype(np.float64)
    order = np.argsort(-keys[kept], kind="stable")
    k, w = keys[kept][order], w[order]
    starts = np.r_[True, k[1:] != k[:-1]]                 # the first of each run of equal keys
    above = np.r_[0.0, np.cumsum(w)[:-1]][starts]         # the mass of the larger keys
    return int(k[starts][above < top_p * w.sum()].min())


def search_rows() -> tuple:
    """Seven rows of 5000: flat and peaked logits, a top-k cut (kth), temperatures and top-p
    values that put c deep in the row (top_p 0.99 over flat logits: 4900 entries kept), and
    a band of 4500 entries in [4, 4.001] under 500 spread over [-5, 5] holding c: the range
    after the first pass holds the band, more than CAP, and mass above it."""
    g = np.random.default_rng(38)
    x = g.standard_normal((7, 5000)).astype(np.float32)
    x[6] = np.r_[4 + 0.001 * g.random(4500), np.linspace(-5, 5, 500)]
    x[0] *= 0.1
    x[1] *= 4.0
    x[2, ::7] = -np.inf
    x[3] = np.round(x[3] * 8) / 8                          # ties
    kth = np.full(7, -2139095041, np.int64)
    kth[4] = np.sort(ordered_keys(x[4]))[-3000]            # top-k 3000, then top-p
    t = np.array([1.0, 0.8, 1.0, 1.3, 0.7, 2.0, 1.0], np.float32)
    p = np.array([0.99, 0.9, 0.95, 0.6, 0.9, 0.999, 0.5], np.float32)
    return x, kth, t, p


@pytest.mark.parametrize("copy_when, copy_rows", [(None, 7), (0.0, 7), (1e30, 7), (None, 3)])
def test_the_search_finds_the_sorts_threshold_copied_or_not(monkeypatch, copy_when,
                                                            copy_rows):
    """c's key equals the sort's on every row: at the defaults (the range copied once it
    fits), never copied (COPY_WHEN 0), and copied after the first pass (COPY_WHEN 1e30: the
    last row's range holds more than CAP, so the search must go on over the row: searching
    the truncated copy, or the copy with the mass above it lost or counted twice, finds
    another c). With scratch for 3 of the 7 rows of the program, it never copies."""
    import sampling_harness.kernels.sample_logits.triton_top_p_search as search
    if copy_when is not None:
        monkeypatch.setattr(search, "COPY_WHEN", tl.constexpr(copy_when))
    seen = copies_seen(monkeypatch)
    x, kth, t, p = search_rows()
    out = torch.zeros(7, dtype=torch.int32)
    cand = torch.zeros(7 * search.CAP, dtype=torch.float32)
    _top_p_keys[(1,)](torch.from_numpy(x), cand, torch.from_numpy(kth).to(torch.int32),
                      torch.from_numpy(t), torch.from_numpy(p), out, 7, 5000, copy_rows, BLOCK_R=8,
                      BLOCK=1024)
    want = [top_p_key(x[r], int(kth[r]), float(t[r]), float(p[r])) for r in range(7)]
    assert out.tolist() == want
    if copy_when == 0.0 or copy_rows < 7:
        assert not seen
    elif copy_when is None:
        assert seen and seen[0].max() <= search.CAP and seen[0].max() > 100, seen
    else:
        assert seen and seen[0].max() > search.CAP, seen


def test_wide_rows_are_copied_after_the_value_passes(monkeypatch):
    """A flat row of 151936 at top-p 0.99 (the bench's flat-top-p): the range fits the
    scratch after two search passes over the row, spaced by value from the row's least
    value (what makes the copy pay; from the tail bound, three; by key, more;
    benchmarks/top_p_passes.py counts them), and c is the sort's."""
    import sampling_harness.kernels.sample_logits.triton_top_p_search as search
    seen, passes, probes = copies_seen(monkeypatch), [], search.probes

    def counted(*args):
        passes.append(len(seen))                 # copies made before this pass
        return probes(*args)

    monkeypatch.setattr(search, "probes", counted)
    x = torch.randn(1, 151936, generator=torch.Generator().manual_seed(0)) * 0.1
    out = torch.zeros(1, dtype=torch.int32)
    _top_p_keys[(1,)](x, torch.zeros(search.CAP), torch.tensor([-2139095041], dtype=torch.int32),
                      torch.tensor([1.0]), torch.tensor([0.99]), out, 1, 151936, 1,
                      BLOCK_R=1, BLOCK=4096)
    assert len(seen) == 1 and 100 < seen[0].max() <= search.CAP, seen
    assert passes.count(0) <= 2, passes
    assert out.item() == top_p_key(x[0].numpy(), -2139095041, 1.0, 0.99)
