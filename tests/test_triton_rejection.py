"""triton-rejection against the float64 rejection sampler fed the very same random words.

Every output row must equal the reference's, except rows whose residual race is so close
that float32 rounding may order its two best scores either way (ambiguous, rare). Every
output also passes the family's exact contract checks.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

triton_rejection = pytest.importorskip("sampling_harness.kernels.rejection.triton_rejection")

from sampling_harness.device import default_device  # noqa: E402
from sampling_harness.kernels.sample.triton_race import chunk_width, race_bits, race_exact  # noqa: E402
from sampling_harness.reference.rejection_coupled import coupled_output, race_noise, uniforms  # noqa: E402
from sampling_harness.suites.rejection.contract import validate_output  # noqa: E402

DEVICE = default_device()


@pytest.fixture(autouse=True)
def fresh_launch_plans():
    """Launch plans are held per shape: a test that patches the launch arithmetic must not
    read a plan made before (or leave its own to the next test)."""
    triton_rejection.launch_plan.cache_clear()
    yield
    triton_rejection.launch_plan.cache_clear()


def make_batch(counts: list[int], vocab: int, seed: int, with_draft: bool = True) -> dict:
    """Ragged requests, every third greedy. Drafts drawn from q; target laws q tilted by
    exp(N(0, 1)), with rows peaked at the draft (acceptance about 1/2), rows p = q (always
    accepted), drafts of target probability 0 (always rejected), and greedy rows with a tie
    for the maximum between two columns, the draft mostly the first of them."""
    g = torch.Generator().manual_seed(seed)
    total, rows = sum(counts), torch.arange(sum(counts))
    q = torch.rand(total, vocab, generator=g).pow_(4)
    q[:, torch.randperm(vocab, generator=g)[: vocab // 4]] = 0
    q[:, 0] += 1e-3
    q /= q.sum(1, keepdim=True)
    drafts = torch.multinomial(q, 1, generator=g).squeeze(1) if total else rows
    p = q * torch.randn(total, vocab, generator=g).exp_()
    p[rows % 3 == 2, drafts[rows % 3 == 2]] += p.sum(1)[rows % 3 == 2]
    p[rows % 5 == 1] = q[rows % 5 == 1]
    p[rows % 7 == 3, drafts[rows % 7 == 3]] = 0
    greedy = torch.arange(len(counts)) % 3 == 0
    owner = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts, dtype=int))
    for t in rows[greedy[owner]].tolist():
        first, second = sorted(torch.randperm(vocab, generator=g)[:2].tolist()) \
            if vocab > 1 else (0, 0)
        p[t, first] = p[t, second] = p[t].max() + 1
        pick = torch.rand((), generator=g).item()
        drafts[t] = first if pick < 0.8 else second if pick < 0.9 else drafts[t]
    p /= p.sum(1, keepdim=True)
    return {"draft_token_ids": drafts.to(DEVICE), "num_draft_tokens": counts,
            "draft_probs": q.to(DEVICE) if with_draft else None, "target_probs": p.to(DEVICE),
            "bonus_token_ids": torch.randint(vocab, (len(counts),), generator=g).to(DEVICE),
            "greedy": greedy.to(DEVICE)}


def run(inputs: dict, seed: int) -> torch.Tensor:
    fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    return triton_rejection.rejection_exact(**fresh, seed=seed)


def reference(inputs: dict, seed: int):
    """(output, ambiguous): the float64 sampler on the kernel's acceptance and race words."""
    batch, vocab = len(inputs["num_draft_tokens"]), inputs["target_probs"].shape[1]
    words = triton_rejection.rejection_bits(batch, max(inputs["num_draft_tokens"], default=0),
                                            seed, DEVICE)
    chunk_q, token_q = race_noise(*(w.cpu().numpy() for w in race_bits(batch, vocab, seed,
                                                                        DEVICE)))
    host = {k: v.cpu().numpy() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    return coupled_output(host["draft_token_ids"], host["num_draft_tokens"],
                          host["draft_probs"], host["target_probs"], host["bonus_token_ids"],
                          host["greedy"], words.cpu().numpy(), chunk_q, token_q,
                          chunk_width(vocab))


def assert_coupled(inputs: dict, seed: int) -> np.ndarray:
    out = run(inputs, seed)
    validate_output(out, inputs)
    expected, ambiguous = reference(inputs, seed)
    wrong = (out.cpu().numpy() != expected).any(1) & ~ambiguous
    assert not wrong.any(), f"requests {np.flatnonzero(wrong)[:5]} differ from the reference"
    assert ambiguous.mean() < 0.05
    return expected


def ragged(batch: int, most: int, seed: int) -> list[int]:
    """Counts in [0, most], zeros included, the largest present."""
    counts = np.random.default_rng(seed).integers(0, most + 1, batch).tolist()
    return counts[:-1] + [most]


@pytest.mark.parametrize("batch,most,vocab,with_draft", [
    (60, 4, 1031, True), (48, 4, 3000, False), (24, 3, 5000, True), (16, 5, 13, True),
    (16, 5, 13, False), (1, 3, 300, True), (4, 3, 2, True)])
def test_matches_float64_sampler_on_same_words(batch, most, vocab, with_draft):
    """Every unambiguous request equals the float64 sampler: accepted drafts, recovered,
    greedy or bonus token, placeholders."""
    inputs = make_batch(ragged(batch, most, vocab), vocab, batch * vocab, with_draft)
    expected = assert_coupled(inputs, seed=4321)
    if batch >= 16:  # the batch reaches every branch: early stops, full accepts, placeholders
        counts = np.array(inputs["num_draft_tokens"])
        stop = (expected >= 0).sum(1) - 1
        assert (stop < counts).any() and ((stop == counts) & (counts > 0)).any()


def test_residual_race_is_triton_exact():
    """With q = 0 and p(d) = 0 every request rejects its one draft and races w = p: the
    recovered tokens are triton-exact's draws for the same rows, seed and V, bit for bit."""
    g = torch.Generator().manual_seed(8)
    p = torch.rand(5, 4500, generator=g).pow_(6)
    p[:, 7] = 0
    p /= p.sum(1, keepdim=True)
    out = triton_rejection.rejection_exact(
        torch.full((5,), 7, device=DEVICE), [1] * 5, torch.zeros_like(p).to(DEVICE),
        p.to(DEVICE), torch.zeros(5, dtype=torch.int64, device=DEVICE),
        torch.zeros(5, dtype=torch.bool, device=DEVICE), 31)
    assert torch.equal(out[:, 1], torch.full((5,), -1, device=DEVICE))
    assert torch.equal(out[:, 0], race_exact(p.to(DEVICE), 31))


def test_acceptance_uniforms():
    """The acceptance words are 32-bit words (non-negative as int64) and u is uniform on
    [0, 1): mean 1/2 and variance 1/12 within 6 standard errors."""
    words = triton_rejection.rejection_bits(64, 64, 9, DEVICE).cpu().numpy()
    assert words.min() >= 0 and words.max() < 2**32 and len(np.unique(words)) > 0.99 * words.size
    u = uniforms(words)
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 6 * np.sqrt(1 / 12 / u.size)
    assert abs(u.var() - 1 / 12) < 6 * np.sqrt(1 / 180 / u.size)


def test_no_drafts():
    """T = 0: every request emits its bonus token."""
    inputs = make_batch([0, 0, 0], 17, 1)
    out = run(inputs, 5)
    assert torch.equal(out, inputs["bonus_token_ids"][:, None])
    assert_coupled(inputs, 5)


def test_no_requests():
    empty = make_batch([], 9, 1)
    assert run(empty, 1).shape == (0, 1)


@pytest.mark.parametrize("block_b, positions", [(1, None), (4, None), (8, 16)])
def test_launch_shapes_match(monkeypatch, block_b, positions):
    """One request per program (the GPU's layout), a few, or more requests than the batch
    holds, each with more positions than its drafts need (a GPU holds at least the
    ``positions`` launch setting), give the default's output, with and without draft
    probs."""
    inputs = make_batch(ragged(6, 3, 2), 1031, 11)
    one_hot = {**inputs, "draft_probs": None}
    default, default_one_hot = run(inputs, 77), run(one_hot, 77)
    monkeypatch.setattr(triton_rejection, "_launch_shape", lambda b, v, d, *launch: (block_b, 1))
    if positions is not None:
        monkeypatch.setattr(triton_rejection, "positions_width",
                            lambda width, d, least: positions)
    triton_rejection.launch_plan.cache_clear()
    assert torch.equal(run(inputs, 77), default)
    assert torch.equal(run(one_hot, 77), default_one_hot)


@pytest.mark.parametrize("splits", [2, 3])
def test_split_rows_match(monkeypatch, splits):
    """A row split over 2 or 3 programs (the GPU's layout at small batches; each races or
    takes the argmax of a run of chunks, the last merges): the unsplit output exactly, with
    and without draft probs, greedy requests walking past a matching first draft, and the
    float64 sampler on the same words."""
    inputs = make_batch(ragged(12, 4, 21), 5000, 21)          # 3 chunks of 2048 columns
    one_hot = {**inputs, "draft_probs": None}
    default, default_one_hot = run(inputs, 78), run(one_hot, 78)
    monkeypatch.setattr(triton_rejection, "split_count", lambda *args: splits)
    triton_rejection.launch_plan.cache_clear()
    assert torch.equal(run(inputs, 78), default)
    assert torch.equal(run(one_hot, 78), default_one_hot)
    assert_coupled(inputs, 78)
    greedy = inputs["greedy"].cpu().numpy()
    walked = (default.cpu().numpy() >= 0).sum(1) - 1 > 0
    assert (greedy & walked).any()           # a greedy request accepted its first draft


def test_same_seed_same_output_and_seed_changes_draws():
    inputs = make_batch(ragged(32, 4, 3), 257, 3)
    first = run(inputs, 5)
    assert torch.equal(first, run(inputs, 5))
    assert not torch.equal(first, run(inputs, 6))


def test_rejects_wrong_dtype():
    inputs = make_batch([2, 1], 7, 1)
    inputs["target_probs"] = inputs["target_probs"].double()
    with pytest.raises(ValueError, match="target_probs"):
        run(inputs, 0)


SYNCING = ("item", "tolist", "numpy", "cpu", "__array__", "__bool__", "__int__", "__float__",
           "__index__")


def test_the_call_reads_no_device_value_on_the_host(monkeypatch):
    """The host side of a call (checks, layout, launch settings) with every Tensor method
    that brings a value to the host (.item(), .tolist(), .numpy(), .cpu(), bool(), int(),
    ...) raising, and the launch recorded instead of run: what the wrapper decides, it
    decides from shapes, dtypes and the host list num_draft_tokens, so it never waits for a
    device (capturable in a CUDA graph; on a GPU the next test proves it end to end)."""
    inputs = make_batch([3, 0, 2, 4], 1031, 5)
    launches = []

    class Recorded:
        def __getitem__(self, grid):
            return lambda *args, **kwargs: launches.append((grid, args, kwargs))

    monkeypatch.setattr(triton_rejection, "_rejection_kernel", Recorded())
    for name in SYNCING:
        def refuse(*args, name=name, **kwargs):
            raise AssertionError(f"the call brought a device value to the host: Tensor.{name}")
        monkeypatch.setattr(torch.Tensor, name, refuse)
    out = triton_rejection.rejection_exact(**inputs, seed=3)
    monkeypatch.undo()
    assert len(launches) == 1 and out.shape == (4, 5)
    layout = launches[0][1][2:4]
    assert layout[0].tolist() == [0, 3, 3, 5] and layout[1].tolist() == [3, 0, 2, 4]


@pytest.mark.skipif(DEVICE != "cuda", reason="needs a CUDA device")
def test_call_never_synchronises_and_replays_in_a_cuda_graph():
    """After one eager call (which puts the counts' layout on the device), a call raises
    under torch's sync debug mode "error" if anything synchronises, and a CUDA graph of it
    replays the eager output, greedy, probabilistic, with and without draft probs. A capture
    of counts never seen eagerly is refused with a one-line error, not a broken graph."""
    for with_draft in (True, False):
        inputs = make_batch(ragged(24, 4, 9), 3000, 17, with_draft)
        eager = triton_rejection.rejection_exact(**inputs, seed=9)
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            again = triton_rejection.rejection_exact(**inputs, seed=9)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        assert torch.equal(again, eager)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = triton_rejection.rejection_exact(**inputs, seed=9)
        captured.fill_(-7)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(captured, eager)
    unseen = make_batch([5, 1, 2], 3000, 18)
    with pytest.raises(RuntimeError, match="outside the CUDA graph capture"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            triton_rejection.rejection_exact(**unseen, seed=9)
