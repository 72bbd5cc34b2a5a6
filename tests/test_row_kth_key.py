"""The fallback's x_(k) search (kernels/sample_logits/triton_row_fallback.py ``row_kth_key``):
the k-th largest key of each row, against a sort, on rows that settle early (exactly k keys
reach a probe: ties, a few large logits) and rows that narrow to a single key."""

import pytest
import torch
import triton
import triton.language as tl

from sampling_harness.kernels.sample_logits.triton_row_fallback import row_kth_key
from sampling_harness.kernels.sample_logits.triton_top_k_select import value_of_key

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"      # the GPU's code either way


@triton.jit
def _kth(logits_ptr, k_ptr, out_ptr, B, V, R: tl.constexpr, SEARCH: tl.constexpr,
         UNROLL: tl.constexpr):
    rows = tl.program_id(0) * R + tl.arange(0, R)
    ok = rows < B
    k = tl.load(k_ptr + rows, mask=ok, other=0)
    key = row_kth_key(logits_ptr, rows.to(tl.int64), ok & (k > 0), V, V, k, SEARCH, UNROLL)
    tl.store(out_ptr + rows, value_of_key(key), mask=ok & (k > 0))


def kth_values(logits: torch.Tensor, k: torch.Tensor, search: int, unroll: int) -> torch.Tensor:
    out = torch.full((logits.shape[0],), float("nan"), device=logits.device)
    _kth[(triton.cdiv(logits.shape[0], 4),)](logits, k, out, logits.shape[0], logits.shape[1],
                                             R=4, SEARCH=search, UNROLL=unroll)
    return out


def hard_rows(vocab: int = 300) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of ties, a few large logits, -inf halves and continuous noise, each with a k
    that lands on a tie, inside one, past one, at 1 and at V - 1."""
    g = torch.Generator().manual_seed(5)
    rows, ks = [], []
    spread = torch.full((vocab,), -4.0)
    spread[torch.randperm(vocab, generator=g)[:8]] = 0.0
    for k in (8, 3, 9, 1, vocab - 1):
        rows.append(spread.clone())
        ks.append(k)
    noise = torch.randn(vocab, generator=g)
    for k in (1, 2, 50, vocab // 2, vocab - 1):
        rows.append(noise.clone())
        ks.append(k)
    steps = torch.randint(0, 5, (vocab,), generator=g).float()
    for k in (1, 7, 60, 61, vocab - 1):
        rows.append(steps.clone())
        ks.append(k)
    half = torch.randn(vocab, generator=g)
    half[: vocab // 2] = float("-inf")
    for k in (1, vocab // 2, vocab // 2 + 1, vocab - 1):
        rows.append(half.clone())
        ks.append(k)
    tiny = torch.full((vocab,), -1e-38)
    tiny[:3] = torch.tensor([1e-45, 0.0, -0.0])
    for k in (1, 2, 3, 4):
        rows.append(tiny.clone())
        ks.append(k)
    return (torch.stack(rows).contiguous().to(DEVICE),
            torch.tensor(ks, dtype=torch.int64, device=DEVICE))


@pytest.mark.parametrize("search, unroll", [(64, 1), (32, 4)])
def test_kth_key_is_the_sorts_kth_value(search, unroll):
    logits, k = hard_rows()
    expected = logits.sort(dim=1, descending=True).values[torch.arange(len(k)), k - 1]
    got = kth_values(logits, k, search, unroll)
    assert torch.equal(got == 0, expected == 0)          # -0.0 reads as +0.0
    assert torch.equal(got[expected != 0], expected[expected != 0]), (got, expected)
