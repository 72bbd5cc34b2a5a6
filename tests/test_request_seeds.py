"""Per-request seeds (issue 25, item 1) and the batch edits of the batch_invariance check.

The project's kernels that declare per-request seeds: a seed tensor of the wrong dtype, shape,
device or range is one ValueError line; a request with seed s draws what the single-row
batch of its row draws with int seed s (the project's layout, not the contract: the contract
asks only that nothing else moves it); unseeded rows never move seeded ones; the int path is
unchanged by the feature (the coupled tests of each kernel check its stream bit for bit).
The edits of an int-seed run keep every surviving request's row; a kernel without the
metadata gets the int-seed part and the skip line. All on tiny shapes (Triton through its
interpreter).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sampling_harness.checks.batch_invariance import (
    INT_SEED_EDITS,
    PER_REQUEST_EDITS,
    Adapter,
    Pool,
)
from sampling_harness.device import resolve_device
from sampling_harness.families.registry import entries, role_of
from sampling_harness.seeds import SKIPPED, takes_request_seeds
from tests.helpers import cli, verdicts

DEVICE = resolve_device("auto")
GEN = torch.Generator().manual_seed(25)
PROBS = torch.rand(5, 40, generator=GEN) ** 3
PROBS = (PROBS / PROBS.sum(1, keepdim=True)).to(DEVICE)
LOGITS = (torch.randn(5, 40, generator=GEN) * 2).to(DEVICE)
SETTINGS = tuple(s.to(DEVICE) for s in (torch.tensor([1.0, 0.7, 0.0, 1.3, 1.0]),
                                        torch.tensor([0, 9, 0, 0, 3]),
                                        torch.tensor([1.0, 0.9, 1.0, 0.8, 1.0])))
SEEDS = torch.tensor([5, 7, -1, 9, 2**31 - 1], device=DEVICE)


def _sample(name):
    fn = entries("sample")[name].load()
    return lambda rows, seed: fn(PROBS[rows].clone(), seed)


def _sample_logits(name):
    fn = entries("sample-logits")[name].load()
    return lambda rows, seed: fn(LOGITS[rows].clone(), *(s[rows] for s in SETTINGS), seed)


KERNELS = {f"sample/{n}": _sample(n) for n in ("torch-fp64", "torch-fp32",
                                               "torch-multinomial", "triton-exact",
                                               "triton-inverse-cdf")}
KERNELS.update({f"sample-logits/{n}": _sample_logits(n)
                for n in ("torch-sample-logits", "triton-sample-logits")})


@pytest.mark.parametrize("family,name", [("sample", "torch-fp64"), ("sample", "torch-fp32"),
                                         ("sample", "torch-multinomial"),
                                         ("sample", "triton-exact"),
                                         ("sample", "triton-inverse-cdf"),
                                         ("sample-logits", "torch-sample-logits"),
                                         ("sample-logits", "triton-sample-logits"),
                                         ("rejection", "torch-rejection"),
                                         ("rejection", "triton-rejection")])
def test_project_kernels_declare_per_request_seeds(family, name):
    assert takes_request_seeds(role_of(entries(family)[name].load(), name))


@pytest.mark.parametrize("name", list(KERNELS))
def test_a_request_draws_what_its_row_alone_draws_with_its_seed(name):
    draw = KERNELS[name]
    rows = torch.arange(5, device=DEVICE)
    batch = draw(rows, SEEDS).tolist()
    for row in (0, 1, 3, 4):
        assert batch[row] == int(draw(rows[row:row + 1], int(SEEDS[row]))[0]), row
    shuffled = torch.tensor([4, 0, 3, 1], device=DEVICE)
    again = draw(shuffled, SEEDS[shuffled]).tolist()
    assert again == [batch[4], batch[0], batch[3], batch[1]]


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("bad,words", [
    (torch.tensor([1, 2, 3, 4, 5], dtype=torch.int32), "int64 [5]"),
    (torch.tensor([1, 2, 3]), "int64 [5]"),
    (torch.tensor([1, 2, 3, 4, -2]), "at row 4"),
    (torch.tensor([1, 2, 3, 4, 2**31]), "at row 4"),
])
def test_a_bad_seed_tensor_is_one_line(name, bad, words):
    with pytest.raises(ValueError) as error:
        KERNELS[name](torch.arange(5, device=DEVICE), bad.to(DEVICE))
    assert words in str(error.value) and "\n" not in str(error.value)


def _rejection_batch(counts=(2, 0, 3, 1), vocab=11):
    g = torch.Generator().manual_seed(3)
    total = sum(counts)
    q = torch.rand(total, vocab, generator=g) + 0.1
    q /= q.sum(1, keepdim=True)
    p = torch.rand(total, vocab, generator=g) + 0.1
    p /= p.sum(1, keepdim=True)
    drafts = torch.multinomial(q, 1, generator=g).squeeze(1)
    bonus = torch.randint(vocab, (len(counts),), generator=g)
    greedy = torch.tensor([False, False, True, False])
    return (drafts.to(DEVICE), list(counts), q.to(DEVICE), p.to(DEVICE), bonus.to(DEVICE),
            greedy.to(DEVICE))


@pytest.mark.parametrize("name", ["torch-rejection", "triton-rejection"])
def test_rejection_requests_keep_their_draws_alone_and_reordered(name):
    fn = entries("rejection")[name].load()
    drafts, counts, q, p, bonus, greedy = _rejection_batch()
    seeds = torch.tensor([11, 12, 13, 14], device=DEVICE)
    out = fn(drafts, counts, q, p, bonus, greedy, seeds)
    starts = np.cumsum([0, *counts])
    for b, n in enumerate(counts):
        rows = slice(starts[b], starts[b] + n)
        alone = fn(drafts[rows], [n], q[rows], p[rows], bonus[b:b + 1], greedy[b:b + 1],
                   int(seeds[b]))
        assert alone[0, :n + 1].tolist() == out[b, :n + 1].tolist(), b
    with pytest.raises(ValueError, match="int64 \\[4\\]"):
        fn(drafts, counts, q, p, bonus, greedy, seeds[:3])


def test_int_seed_edits_keep_every_surviving_request_on_its_row():
    adapter = Adapter(shape=lambda rng: {}, fresh=lambda rng, shape: float(rng.random()),
                      inputs=None, outputs=None)
    rng = np.random.default_rng(0)
    for _ in range(300):
        pool = Pool(adapter, {}, rng, per_request=False)
        base = [pool.request() for _ in range(int(rng.integers(1, 9)))]
        edit = INT_SEED_EDITS[int(rng.integers(len(INT_SEED_EDITS)))]
        edited, name = edit(base, pool)
        assert edited and name
        rows = {r.ident: i for i, r in enumerate(base)}
        assert all(rows[r.ident] == j for j, r in enumerate(edited) if r.ident in rows), name
    pool = Pool(adapter, {}, rng, per_request=True)
    base = [pool.request() for _ in range(6)]
    for edit in PER_REQUEST_EDITS:
        edited, name = edit(base, pool)
        assert edited and name


def test_a_kernel_of_one_seed_per_call_gets_the_int_part_and_the_skip_line(tmp_path):
    code, output, report = cli("check", "sample", "--kernel", "shared-noise", "--device", "cpu",
                               "--budget", "smoke", "-k", "batch_invariance",
                               report_dir=tmp_path)
    assert verdicts(report) == {"batch_invariance": "pass"}, output
    message = report["checks"][0]["message"]
    assert "int seed:" in message and f"per-request seeds: {SKIPPED}" in message


@pytest.mark.parametrize("name", list(KERNELS))
def test_a_seed_tensor_on_another_device_is_one_line(name):
    with pytest.raises(ValueError) as error:
        KERNELS[name](torch.arange(5, device=DEVICE),
                      torch.zeros(5, dtype=torch.int64, device="meta"))
    assert "on meta" in str(error.value) and "\n" not in str(error.value)


def test_an_empty_input_with_zero_strides_is_guarded():
    from sampling_harness.run.guard import check_guards, guarded_copy
    empty = {"draft_token_ids": torch.as_tensor(np.zeros(0, np.int64)),
             "target_probs": torch.as_tensor(np.zeros((0, 5), np.float32))}
    assert empty["target_probs"].stride() == (0, 0)
    fresh, guards = guarded_copy(empty)
    check_guards(guards, fresh, empty, ())
