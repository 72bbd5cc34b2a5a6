"""triton-logprobs with each row split across programs (the GPU's launch shape), forced on CPU
through the module's SPLITS / CPU_BLOCK / CPU_TILE: the partial (max, sum-exp) and counts
merged by the finish kernel give the ranks of one program per row exactly and values within
float32 rounding of the merge order; and both agree with float64 and torch-logprobs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
from test_logprobs_kernels import CASES, MODES, _agree, batch, expected, random_case

import kernels.logprobs.triton_logprobs as tlp
from kernels.logprobs.torch_logprobs import logprobs_torch

# (SPLITS, CPU_BLOCK, CPU_TILE): one program per row block (None), then 2, 3 and 7 splits of
# small blocks (several blocks per split, a ragged last block) and fewer rows per program than B
pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(), reason="forces the interpreter's tiles (CPU_BLOCK, CPU_TILE); "
    "on a GPU triton's float32 division is not torch's, so processed_logits are not bit-equal")

LAUNCHES = [(None, 4096, 2**20), (2, 16, 2**20), (3, 8, 64), (7, 4, 2**12)]


def edge_case():
    """-inf entries (a row of them but one), +-0, ties across split boundaries, padding and
    out-of-range-free ids in a vocabulary of 50 (many splits of small blocks)."""
    x = np.linspace(-3, 3, 50)[None, :].repeat(5, 0)
    x[0, ::7] = -np.inf
    x[1, :] = -np.inf
    x[1, 17] = 2.0
    x[2, :] = 1.5                                 # all tied
    x[3, [0, 13, 26, 49]] = 4.0                   # ties at the top, in different splits
    x[4, [3, 4]] = [0.0, -0.0]
    ids = [[0, 7, 8, 49, -1, 14, 21], [17, 0, 49, 1, -1, -1, 5], [0, 49, 25, -1, 3, 2, 1],
           [13, 0, 49, 26, 12, -1, 30], [3, 4, 5, -1, 0, 49, 48]]
    return batch(x, ids, [0.5, 1.0, 2.0, 0.0, 1.3], [3, 0, 10, 2, 49], [1.0, 0.9, 0.5, 1.0, 0.3])


SPLIT_CASES = {  # each case's four modes under every launch: kept few (the interpreter)
    "edge": edge_case(),
    "ties": CASES["ties"],
    "bf16": CASES["bf16"],
    "k21": random_case(6, 1000, 21, 12),
}


def run(monkeypatch, launch, inputs, mode):
    """The kernel under one launch shape; blocks of at least V / 32 columns (the interpreter
    pays per loop trip)."""
    splits, block, tile = launch
    monkeypatch.setattr(tlp, "SPLITS", splits)
    vocab = inputs["logits"].shape[1]
    monkeypatch.setattr(tlp, "CPU_BLOCK", max(block, triton.next_power_of_2(vocab) // 32))
    monkeypatch.setattr(tlp, "CPU_TILE", tile)
    return tlp.logprobs_triton(mode=mode, **inputs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(SPLIT_CASES))
def test_split_launches_agree(monkeypatch, case, mode):
    inputs = SPLIT_CASES[case]
    live = inputs["token_ids"] >= 0
    want_values, want_ranks = expected(mode=mode, **inputs)
    torch_values, torch_ranks = logprobs_torch(mode=mode, **inputs)
    one_values, one_ranks = run(monkeypatch, LAUNCHES[0], inputs, mode)
    for launch in LAUNCHES:
        values, ranks = run(monkeypatch, launch, inputs, mode)
        _agree((values, ranks), want_values, want_ranks, inputs)
        assert torch.equal(ranks[live], one_ranks[live]) and torch.equal(ranks[live],
                                                                         torch_ranks[live])
        assert torch.equal(values.isneginf(), torch_values.isneginf())
        if mode.endswith("logits"):               # no sum: bit-identical to torch
            assert torch.equal(values, torch_values) and torch.equal(values, one_values)
        else:
            finite = ~values.isneginf()
            assert torch.allclose(values[finite], one_values[finite], rtol=1e-6, atol=1e-5)
            assert torch.allclose(values[finite], torch_values[finite], rtol=1e-6, atol=1e-5)


def test_launch_shape_splits_whole_blocks(monkeypatch):
    """Chunks are whole blocks, every split has columns, and SPLITS is capped by the blocks."""
    monkeypatch.setattr(tlp, "CPU_BLOCK", 16)
    for vocab, wanted in [(50, 3), (50, 7), (64, 4), (17, 2), (3, 5), (9000, 1)]:
        monkeypatch.setattr(tlp, "SPLITS", wanted)
        _, block, _, splits, chunk = tlp._launch_shape(4, vocab, 21, torch.device("cpu"))
        assert chunk % block == 0 and (splits - 1) * chunk < vocab <= splits * chunk
        assert splits <= min(wanted, -(-vocab // block))


def test_id_groups_cover_k_exactly_where_three_powers_do():
    for slots in range(1, 70):
        g1, g2, g3, groups = tlp.id_groups(slots)
        sizes = (g1, g2, g3)[:groups]
        assert sum(sizes) >= slots and all(g & (g - 1) == 0 for g in sizes)
        assert sum(sizes[:-1]) < slots          # no group lies wholly beyond K
        if bin(slots).count("1") <= 3:
            assert sum(sizes) == slots
    assert tlp.id_groups(21) == (16, 4, 1, 3)
