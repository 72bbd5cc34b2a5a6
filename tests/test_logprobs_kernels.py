"""Family ``logprobs``: torch-logprobs and triton-logprobs against a float64 computation
written here, triton against torch, and each mutant against the clean kernel."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sampling_harness.device import default_device
from sampling_harness.kernels.logprobs.torch_logprobs import logprobs_torch
from sampling_harness.kernels.logprobs.triton_logprobs import logprobs_triton
from sampling_harness.kernels.mutants import logprobs_mutants as mutants

MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
KERNELS = {"torch": logprobs_torch, "triton": logprobs_triton}
NEG_INF = float("-inf")
DEVICE = default_device()


def expected(logits, token_ids, mode, temperature, top_k, top_p):
    """(values, ranks) in float64 from the exact input values, row by row."""
    x_all = logits.to(torch.float64).cpu().numpy()
    values = np.full(token_ids.shape, -np.inf)
    ranks = np.zeros(token_ids.shape, dtype=np.int64)
    for b, x in enumerate(x_all):
        vocab = x.size
        keep = np.ones(vocab, dtype=bool)
        z = x.copy()
        if mode.startswith("processed"):
            t = float(temperature[b])
            z = x / (t if t != 0 else 1.0)
            k = int(top_k[b])
            if 0 < k < vocab:
                keep &= x >= np.sort(x)[::-1][k - 1]
            p = float(top_p[b])
            if p < 1:
                masked = np.where(keep, z, -np.inf)
                probs = np.exp(masked - masked.max())
                probs /= probs.sum()
                order = np.argsort(-np.where(keep, x, -np.inf), kind="stable")
                before = np.cumsum(probs[order]) - probs[order]
                inside = ((before < p) | (np.arange(vocab) == 0)) & keep[order]
                keep &= x >= x[order][inside].min()
            z = np.where(keep, z, -np.inf)
        key = np.where(keep, x, -np.inf)
        if mode.endswith("logprobs"):
            top = z.max()
            z = z - (top + math.log(np.exp(z - top).sum()))
        for slot, i in enumerate(token_ids[b].tolist()):
            if i >= 0:
                values[b, slot] = z[i]
                ranks[b, slot] = int((key >= key[i]).sum())
    return values, ranks


def batch(x, ids, t, k, p, dtype=torch.float32):
    return dict(logits=torch.as_tensor(x, dtype=torch.float32).to(dtype).to(DEVICE),
                token_ids=torch.as_tensor(ids, dtype=torch.int64, device=DEVICE),
                temperature=torch.as_tensor(t, dtype=torch.float32, device=DEVICE),
                top_k=torch.as_tensor(k, dtype=torch.int64, device=DEVICE),
                top_p=torch.as_tensor(p, dtype=torch.float32, device=DEVICE))


def random_case(rows, vocab, slots, seed, dtype=torch.float32, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, vocab, generator=g) * scale
    ids = torch.randint(vocab, (rows, slots), generator=g)
    ids[torch.rand(rows, slots, generator=g) < 0.25] = -1
    ids[0, 0], ids[-1, -1] = -1, -1         # padding first and last
    t = [0.7, 0.0, 1.3, 1.0][:rows] + [0.9] * max(0, rows - 4)
    k = [0, 5, vocab, -1][:rows] + [vocab - 1] * max(0, rows - 4)
    p = [1.0, 0.8, 0.5, 0.9][:rows] + [0.95] * max(0, rows - 4)
    return batch(x, ids, t, k, p, dtype)


def ties_case():
    """Ties at the top-k boundary (k = 3 with 3.0 three times), the top-p crossing token
    (probs 0.5, 0.3, 0.15, 0.05 at top_p 0.7 keeps the 0.3 token), -inf entries, a row of
    padding only, temperature 0."""
    x = np.full((4, 12), -2.0)
    x[0, :7] = [5.0, 4.0, 3.0, 3.0, 3.0, 2.0, 1.0]
    x[1, :4] = np.log([0.5, 0.3, 0.15, 0.05])
    x[1, 4:] = -np.inf
    x[2, [1, 5, 9]] = -np.inf
    x[2, 3] = 7.0
    ids = [[2, 3, 4, 5, 0, 1], [0, 1, 2, 3, 4, -1], [-1, 1, 3, 5, 0, 11], [-1] * 6]
    return batch(x, ids, [0.5, 0.0, 2.0, 1.0], [3, 0, 20, 2], [1.0, 0.7, 0.9, 0.5])


def order_case():
    """probs 0.4, 0.35, 0.25 with top_k 2 and top_p 0.5: top-k first keeps one token
    (0.533 of the renormalised pair crosses 0.5), top-p first keeps two."""
    x = np.log([[0.4, 0.35, 0.25]])
    return batch(x, [[0, 1, 2]], [1.0], [2], [0.5])


CASES = {
    "small-vocab": random_case(4, 37, 5, 0),
    "bf16": random_case(4, 300, 7, 1, torch.bfloat16),
    "fp16": random_case(4, 300, 7, 2, torch.float16),
    "ties": ties_case(),
    "order": order_case(),
    "huge-range": random_case(3, 500, 4, 3, scale=3000.0),
    "several-blocks": random_case(5, 9000, 9, 4),
    "block-multiple": random_case(2, 4096, 3, 5),
}


def _tolerance(inputs):
    x = inputs["logits"].float()
    t = inputs["temperature"]
    scale = (x.abs().nan_to_num(0.0, 0.0, 0.0).amax(dim=1) / torch.where(t == 0, 1.0, t)).amax()
    return 2e-6 * max(1.0, float(scale)) * 4


def _agree(got, want_values, want_ranks, inputs):
    values, ranks = (t.cpu() for t in got)
    assert values.dtype == torch.float32 and ranks.dtype == torch.int64
    assert values.shape == ranks.shape == inputs["token_ids"].shape
    want = torch.from_numpy(want_values)
    assert torch.equal(values.isneginf(), want.isneginf())
    finite = ~want.isneginf()
    assert torch.allclose(values.double()[finite], want[finite], rtol=0,
                          atol=_tolerance(inputs))
    live = inputs["token_ids"].cpu() >= 0
    assert torch.equal(ranks[live], torch.from_numpy(want_ranks)[live])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("impl", list(KERNELS))
def test_against_float64(impl, case, mode):
    inputs = CASES[case]
    got = KERNELS[impl](mode=mode, **inputs)
    _agree(got, *expected(mode=mode, **inputs), inputs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["small-vocab", "ties", "bf16"])
def test_triton_equals_torch(case, mode):
    inputs = CASES[case]
    (tv, tr), (rv, rr) = logprobs_torch(mode=mode, **inputs), logprobs_triton(mode=mode, **inputs)
    live = inputs["token_ids"] >= 0
    assert torch.equal(tr[live], rr[live])
    if mode.endswith("logits"):
        assert torch.equal(tv, rv)
    else:
        assert torch.equal(tv.isneginf(), rv.isneginf())
        assert torch.allclose(tv[live & ~tv.isneginf()], rv[live & ~tv.isneginf()],
                              rtol=1e-6, atol=1e-5)


def test_ties_case_semantics():
    """The hand-computed facts of the ties case: tied boundary tokens kept, the crossing
    token kept, masked tokens at -inf with rank V."""
    values, ranks = logprobs_torch(mode="processed_logits", **CASES["ties"])
    assert values[0, :3].tolist() == [6.0, 6.0, 6.0] and values[0, 3] == NEG_INF
    assert ranks[0, :3].tolist() == [5, 5, 5] and ranks[0, 3] == 12
    assert torch.isfinite(values[1, :2]).all() and values[1, 2:].isneginf().all()


def test_empty_and_validation():
    inputs = random_case(2, 10, 1, 6)
    inputs["token_ids"] = inputs["token_ids"][:, :0]
    for fn in KERNELS.values():
        values, ranks = fn(mode="raw_logprobs", **inputs)
        assert values.shape == ranks.shape == (2, 0)
        with pytest.raises(ValueError):
            fn(mode="logprobs", **inputs)


def _differs(mutant, case, mode, part=0):
    inputs = CASES[case]
    clean = logprobs_torch(mode=mode, **inputs)[part]
    wrong = getattr(mutants, mutant)(mode=mode, **inputs)[part]
    live = inputs["token_ids"] >= 0
    if part == 1:
        return not torch.equal(clean[live], wrong[live])
    return not torch.equal(clean, wrong)


@pytest.mark.parametrize("mutant, case, mode, part", [
    ("gathered_from_logits", "small-vocab", "raw_logprobs", 0),
    ("processed_in_raw_mode", "small-vocab", "raw_logits", 0),
    ("processed_in_raw_mode", "small-vocab", "raw_logprobs", 0),
    ("padding_as_last_entry", "small-vocab", "raw_logprobs", 0),
    ("bf16_log_softmax", "small-vocab", "raw_logprobs", 0),
    ("bf16_log_softmax", "bf16", "processed_logprobs", 0),
    ("ranks_strict", "ties", "raw_logits", 1),
    ("temperature_twice", "small-vocab", "processed_logits", 0),
    ("topk_drops_ties", "ties", "processed_logprobs", 0),
    ("topp_before_topk", "order", "processed_logprobs", 0),
    ("topp_excludes_crossing", "ties", "processed_logits", 0),
])
def test_mutant_differs(mutant, case, mode, part):
    assert _differs(mutant, case, mode, part)


def test_mutants_keep_the_rest():
    """A mutant is the clean kernel where its bug does not apply."""
    assert not _differs("gathered_from_logits", "small-vocab", "processed_logprobs")
    assert not _differs("temperature_twice", "small-vocab", "raw_logprobs")
    assert not _differs("topk_drops_ties", "order", "processed_logprobs")
    assert not _differs("ranks_strict", "small-vocab", "raw_logprobs")


def test_padding_mutant_reads_last_entry():
    inputs = CASES["small-vocab"]
    values, _ = mutants.padding_as_last_entry(mode="raw_logits", **inputs)
    padding = inputs["token_ids"] < 0
    last = inputs["logits"][:, -1:].expand_as(values)
    assert torch.equal(values[padding], last[padding])


@pytest.mark.skipif(DEVICE != "cuda", reason="counts Triton's compiled kernels (the "
                    "interpreter compiles none)")
def test_triton_compiles_once_per_bucket_of_k():
    """K = 1 .. 21 (one bucket: 16 + 4 + 1 keys) in all four modes, at batch sizes 1 to 4
    and two vocabularies, add at most one compiled kernel: the mode and the sizes are
    runtime arguments; the ranks stay torch-logprobs'."""
    from sampling_harness.kernels.logprobs.triton_logprobs import MODES, _logprobs_kernel
    g = torch.Generator().manual_seed(3)
    ones = torch.ones(4, device=DEVICE)
    settings = (ones, torch.zeros(4, dtype=torch.int64, device=DEVICE), ones)
    logprobs_triton(torch.randn(2, 3000).to(DEVICE), torch.zeros(2, 1, dtype=torch.int64,
                                                                 device=DEVICE), MODES[0],
                    *(x[:2] for x in settings))
    compiled = _logprobs_kernel.device_caches[torch.cuda.current_device()][0]
    before = len(compiled)
    for k in range(1, 22):
        rows, vocab = 1 + k % 4, (3000, 3001)[k % 2]
        x = torch.randn(rows, vocab, generator=g).to(DEVICE)
        ids = torch.randint(vocab, (rows, k), generator=g).to(DEVICE)
        mode = MODES[k % 4]
        args = (x, ids, mode, *(s[:rows] for s in settings))
        _, ranks = logprobs_triton(*args)
        assert torch.equal(ranks, logprobs_torch(*args)[1])
    assert len(compiled) - before <= 1
