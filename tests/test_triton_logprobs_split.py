"""triton-logprobs with each row split across programs (the GPU's launch shape), forced on CPU
through its ``Launch`` argument (splits, block, rows a program): the partial (max, sum-exp)
and counts merged by the row's last program give the ranks of one program per row exactly
and values within float32 rounding of the merge order; and both agree with float64 and
torch-logprobs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
from test_logprobs_kernels import CASES, MODES, _agree, batch, expected, random_case

import sampling_harness.kernels.logprobs.triton_logprobs as tlp
from sampling_harness.kernels.logprobs.torch_logprobs import logprobs_torch

# (splits, block, rows a program): one program per row block, then 2, 3 and 7 splits of small
# blocks (several blocks per split, a ragged last block) and fewer rows per program than B
pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(), reason="forces CPU launches (small blocks, several rows a "
    "program); on a GPU triton's float32 division is not torch's, so processed_logits are "
    "not bit-equal")

LAUNCHES = [(1, 4096, 8), (2, 16, 8), (3, 8, 1), (7, 4, 2)]


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


def run(launch, inputs, mode):
    """The kernel under one launch shape; blocks of at least V / 32 columns (the interpreter
    pays per loop trip), at most V rounded up to a power of two."""
    splits, block, rows = launch
    vocab = triton.next_power_of_2(inputs["logits"].shape[1])
    block = min(max(block, vocab // 32), vocab)
    return tlp.logprobs_launch(mode=mode, launch=tlp.Launch(
        block=block, warps=4, rows=rows, splits=splits), **inputs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(SPLIT_CASES))
def test_split_launches_agree(case, mode):
    inputs = SPLIT_CASES[case]
    live = inputs["token_ids"] >= 0
    want_values, want_ranks = expected(mode=mode, **inputs)
    torch_values, torch_ranks = logprobs_torch(mode=mode, **inputs)
    one_values, one_ranks = run(LAUNCHES[0], inputs, mode)
    for launch in LAUNCHES:
        values, ranks = run(launch, inputs, mode)
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


def test_split_columns_are_whole_blocks():
    """Chunks are whole blocks, every split has columns, and the splits are capped by the
    blocks."""
    for vocab, wanted in [(50, 3), (50, 7), (64, 4), (17, 2), (3, 5), (9000, 1)]:
        splits, chunk = tlp.split_columns(vocab, 16, wanted)
        assert chunk % 16 == 0 and (splits - 1) * chunk < vocab <= splits * chunk
        assert splits <= min(wanted, -(-vocab // 16))
