"""triton-logprobs' pruned rank counting (kernels/logprobs/triton_logprobs.py) and the
bench's requested ids. Ranks must be exact whatever the pruning skips: ties at block edges,
ids whose keys equal a block max, -inf entries and -inf keys (rank V), padding, K = 1 to
32, ids that are a row's largest (pruning skips most blocks) and random ids (it skips
none), under forced, default and no pruning (the unpruned loop), one program per row or
several. The blocks that count are checked exactly against a recount of the kernel's rule;
K falls into a few compiled buckets."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
import triton
from test_logprobs_kernels import _agree, batch, expected

import sampling_harness.kernels.logprobs.rank_fold as rank_fold
import sampling_harness.kernels.logprobs.triton_logprobs as tlp
from sampling_harness.bench.command import with_variants
from sampling_harness.kernels.logprobs.torch_logprobs import logprobs_torch
from sampling_harness.suites.logprobs import FAMILY
from sampling_harness.suites.logprobs.contract import bench_batch

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(), reason="forces CPU launches (small blocks, splits) and spies "
    "on the interpreter's calls")


def top_ids(x: torch.Tensor, slots: int, seed: int) -> torch.Tensor:
    """One id sampled from each row's softmax, then the row's slots - 1 largest."""
    g = torch.Generator().manual_seed(seed)
    finite = torch.nan_to_num(x.float(), neginf=-1e30)
    sampled = torch.multinomial(torch.softmax(finite, dim=1), 1, generator=g)
    return torch.cat([sampled, finite.topk(slots - 1, dim=1).indices], dim=1)


def edge_case():
    """V = 64 in blocks of 8: ties across block edges (7 | 8, 15 | 16 | 23) with a requested
    id among them, ids at their block's max, -inf entries and -inf keys, a flat row, a row
    of the largest ids shuffled with a duplicate, a row of padding."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(6, 64, generator=g).numpy().astype(np.float64)
    x[0, [7, 8]] = 2.5
    x[0, [15, 16, 23]] = 3.0
    x[1, ::3] = -np.inf
    x[2, :] = 1.0
    x[2, 40] = -np.inf
    x[3, [0, 8, 63]] = x[3].max() + 1.0             # the row max thrice, at block starts/ends
    ids = [[7, 8, 23, 16, int(np.argmax(x[0, 24:32])) + 24, 0, 63],
           [-1, 0, 3, 1, int(np.argmax(np.where(np.isinf(x[1]), -9, x[1]))), 62, -1],
           [0, 40, 63, 8, 7, -1, 31],
           [63, 0, 8, *np.argsort(-x[3])[3:6].tolist(), 8],
           [-1] * 7,
           [int(np.argmin(x[5])), int(np.argmax(x[5])), 31, 32, 33, 15, 16]]
    return batch(x, ids, [0.5, 1.0, 2.0, 1.0, 1.0, 0.0], [3, 0, 10, 5, 0, 40],
                 [1.0, 0.9, 0.5, 1.0, 0.3, 0.95])


def sized_case(rows, vocab, slots, seed, top, dtype=torch.float32):
    """Logits N(0, 9) with a few -inf and ties; ids the largest (top) or uniform, some -1."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, vocab, generator=g) * 3.0
    x[:, 5] = -np.inf
    x[:, 9] = x[:, 10] = x[:, 11]                     # a tie across a block edge (8 wide)
    ids = top_ids(x, slots, seed) if top else torch.randint(vocab, (rows, slots), generator=g)
    ids[0, 0] = -1
    ids[-1, -1] = -1 if slots > 1 else ids[-1, -1]
    if slots > 2:
        ids[1 % rows, 1] = 5                          # a -inf entry: rank V (raw modes)
    t = [0.7, 1.0, 1.3, 0.0][:rows] + [0.9] * max(0, rows - 4)
    k = [0, 7, vocab, -1][:rows] + [50] * max(0, rows - 4)
    p = [1.0, 0.8, 0.5, 0.9][:rows] + [0.95] * max(0, rows - 4)
    return batch(x, ids, t, k, p, dtype)


CASES = {
    "edges": edge_case(),
    "top-k21": sized_case(3, 300, 21, 1, top=True),
    "random-k21": sized_case(3, 300, 21, 2, top=False),
    "top-k1": sized_case(3, 100, 1, 3, top=True),
    "random-k1": sized_case(3, 100, 1, 4, top=False),
    "top-k32": sized_case(2, 200, 32, 5, top=True),
    "random-k32": sized_case(2, 200, 32, 6, top=False),
    "top-k31-bf16": sized_case(2, 150, 31, 8, top=True, dtype=torch.bfloat16),
    "top-k12": sized_case(2, 120, 12, 9, top=True),     # two groups: 8 + 4
}
# (prune_limit, splits): the default rule, pruning forced, pruning never (the unpruned loop),
# several programs per row
LAUNCHES = {"default": (None, 1), "forced": (10**9, 3), "never": (-1, 2),
            "default-split": (None, 3)}


def cpu_launch(inputs, block: int, **settings) -> tlp.Launch:
    """The default CPU launch of ``inputs`` with blocks of ``block`` columns and ``settings``."""
    (batch, vocab), slots = inputs["logits"].shape, inputs["token_ids"].shape[1]
    default = tlp.launch_for(batch, vocab, slots, torch.device("cpu"))
    return replace(default, block=block, **settings)


def run(inputs, mode, launch):
    limit, splits = LAUNCHES[launch]
    block = max(8, triton.next_power_of_2(inputs["logits"].shape[1]) // 16)
    return tlp.logprobs_launch(mode=mode, launch=cpu_launch(
        inputs, block, prune_limit=limit, splits=splits), **inputs)


@pytest.mark.parametrize("launch", list(LAUNCHES))
@pytest.mark.parametrize("mode", ["raw_logprobs", "processed_logits"])   # one of each kind: CI time
@pytest.mark.parametrize("case", list(CASES))
def test_ranks_exact_and_values_unchanged(case, mode, launch):
    inputs = CASES[case]
    values, ranks = run(inputs, mode, launch)
    _agree((values, ranks), *expected(mode=mode, **inputs), inputs)
    torch_values, torch_ranks = logprobs_torch(mode=mode, **inputs)
    live = inputs["token_ids"] >= 0
    assert torch.equal(ranks[live], torch_ranks[live])
    assert torch.equal(values.isneginf(), torch_values.isneginf())
    if mode.endswith("logits"):                       # no sum: bit-identical to torch
        assert torch.equal(values, torch_values)


def counted_blocks(x: np.ndarray, ids: np.ndarray, block: int, groups, start: int = 0
                   ) -> tuple[int, int]:
    """(group folds, ids compared) that the pruned loop of one row makes in one program over
    columns start .. V - 1: per block, each group (sorted positions from the end) whose
    smallest key the block's max reaches; padding and -inf keys never count."""
    keys = np.sort([x[i] for i in ids if i >= 0 and x[i] > -np.inf])[::-1]
    width = sum(groups)
    padded = np.concatenate([np.full(width - keys.size, np.inf), keys])
    starts = np.cumsum([0, *groups])[:-1]
    least = [padded[start + size - 1] for start, size in zip(starts, groups, strict=True)]
    folds = compared = 0
    for lo in range(start, x.size, block):
        top = x[lo:lo + block].max()
        for size, smallest in zip(groups, least, strict=True):
            if top >= smallest:
                folds, compared = folds + 1, compared + size
    return folds, compared


@pytest.mark.parametrize("top", [True, False])
def test_blocks_counted_are_those_that_reach_the_keys(monkeypatch, top):
    """A spy on count_lanes: with pruning forced, one row per program, the pruned loop
    counts exactly the (block, group) pairs whose block max reaches the group's smallest
    key; with the largest ids that is few of them, and the ranks stay exact."""
    vocab, slots, block = 1000, 21, 16
    g = torch.Generator().manual_seed(11 + top)
    x = torch.randn(1, vocab, generator=g) * 2.0
    x[0, 100:116] = x[0].max()                        # the row max in one whole block
    ids = top_ids(x, slots, 3) if top else torch.randint(vocab, (1, slots), generator=g)
    inputs = batch(x, ids, [1.0], [0], [1.0])
    calls = []

    def spy(count, key, key_id, LANES):
        calls.append(key_id.shape[1])
        return count_lanes(count, key, key_id, LANES)

    count_lanes = rank_fold.count_lanes
    monkeypatch.setattr(rank_fold, "count_lanes", spy)
    groups = tlp.id_groups(slots)
    pruned_calls = 0
    for limit in (10**9, -1):
        calls.clear()
        _, ranks = tlp.logprobs_launch(mode="raw_logits", launch=cpu_launch(
            inputs, block, rows=1, prune_limit=limit), **inputs)
        assert torch.equal(ranks, logprobs_torch(mode="raw_logits", **inputs)[1])
        if limit > 0:
            want = counted_blocks(x[0].double().numpy(), ids[0].numpy(), block, groups)
        else:                                         # every whole block, all groups; the
            whole = vocab // block                    # ragged last block pruned
            last = counted_blocks(x[0].double().numpy(), ids[0].numpy(), block, groups,
                                  whole * block)
            want = whole * len(groups) + last[0], whole * sum(groups) + last[1]
        assert (len(calls), sum(calls)) == want
        pruned_calls = pruned_calls or sum(calls)
    if top:        # the sampled id is counted in most blocks, the top 20 in a few
        assert pruned_calls < 3 * vocab // block


def test_prune_decision_follows_the_first_block(monkeypatch):
    """Default rule: random ids (many entries of the first block at or above the largest
    keys' group) take the unpruned loop, the largest ids the pruned one."""
    vocab, block = 512, 16
    x = torch.randn(1, vocab, generator=torch.Generator().manual_seed(5))
    calls = []
    count_lanes = rank_fold.count_lanes
    monkeypatch.setattr(rank_fold, "count_lanes", lambda c, k, i, LANES: calls.append(1)
                        or count_lanes(c, k, i, LANES))
    seen = {}
    for name, ids in (("top", top_ids(x, 21, 0)),
                      ("random", torch.randint(vocab, (1, 21), generator=torch.Generator()
                                               .manual_seed(1)))):
        calls.clear()
        inputs = batch(x, ids, [1.0], [0], [1.0])
        tlp.logprobs_launch(mode="raw_logprobs", launch=cpu_launch(inputs, block), **inputs)
        seen[name] = len(calls)
    assert seen["top"] < seen["random"] == 3 * vocab // block   # 3 groups in every block


def test_bench_ids():
    """``top``: one sampled id then the row's K - 1 largest; ``random`` and a bare shape: K
    uniform ids; anything else is refused (the bench turns it into a usage error)."""
    torch.manual_seed(0)
    top = bench_batch("4x1000x21:top", torch.device("cpu"))
    ids, logits = top["token_ids"], top["logits"]
    assert ids.shape == (4, 21) and ids.dtype == torch.int64
    assert torch.equal(ids[:, 1:], logits.topk(20, dim=1).indices)
    assert bool(((ids[:, 0] >= 0) & (ids[:, 0] < 1000)).all())
    for shape in ("4x1000x21:random", "4x1000x21"):
        ids = bench_batch(shape, torch.device("cpu"))["token_ids"]
        assert ids.shape == (4, 21) and bool(((ids >= 0) & (ids < 1000)).all())
    for shape in ("4x1000x21:best", "4x10x21:top"):
        with pytest.raises(ValueError):
            bench_batch(shape, torch.device("cpu"))


def test_bench_variants():
    defaults = FAMILY.bench.gpu_shapes
    assert defaults == ("256x151936x21:top", "256x151936x21:random", "32x128256x21:top",
                        "32x128256x21:random")
    assert with_variants(list(defaults), [], defaults) == list(defaults)
    assert with_variants(list(defaults), ["top"], defaults) == ["256x151936x21:top",
                                                               "32x128256x21:top"]
    assert with_variants(["8x99x3"], [], defaults) == ["8x99x3:top", "8x99x3:random"]
    assert with_variants(["8x99x3:random"], [], defaults) == ["8x99x3:random"]
    assert with_variants(["8x99"], [], ("256x151936",)) == ["8x99"]   # a family without


def test_k_falls_into_a_few_buckets_whose_groups_hold_it():
    """The kernel is compiled per bucket of K, not per K: the groups (powers of two, the
    smallest key alone) hold K <= W positions, W <= max(21, 2 K) (no bucket twice too wide),
    and K = 1 .. 69 take three buckets; K = 21 (an engine's top-20 and its sampled token) is
    16 + 4 + 1 exactly."""
    for slots in range(1, 300):
        groups = tlp.id_groups(slots)
        assert all(g & (g - 1) == 0 for g in groups) and groups[-1] == 1
        assert slots <= sum(groups) <= max(21, 2 * slots)
    assert len({tlp.id_groups(slots) for slots in range(1, 70)}) == 3
    assert tlp.id_groups(21) == (16, 4, 1)
