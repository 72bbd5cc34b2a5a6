"""Family logits-processors without the harness: the float64 reference on rows computed by
hand, its bitmask and min_tokens conventions, the bound that tells float32 from bfloat16
arithmetic, and both kernels (Triton through the interpreter on a CPU) against the
reference on random batches, the Triton kernel also with narrow column blocks and rows
split across programs, bit for bit alike."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import sampling_harness.kernels.logits_processors.triton_logits_processors as tlp
from sampling_harness.kernels.logits_processors.torch_logits_processors import (
    logits_processors_torch,
)
from sampling_harness.kernels.mutants.logits_processors_mutants import (
    penalties_in_logits_dtype,
)
from sampling_harness.reference.logits_processors import bitmask_allowed, process
from sampling_harness.run.terminal import one_line
from sampling_harness.suites.logits_processors.batches import (
    DTYPES,
    PROCESSORS,
    Batch,
    assemble,
)
from sampling_harness.suites.logits_processors.compare import compare, summarise
from sampling_harness.suites.logits_processors.contract import OPTIONS
from sampling_harness.suites.logits_processors.strategies import Knobs, random_row

INF = float("-inf")


def _call(fn, inputs: dict) -> torch.Tensor:
    return fn(inputs["logits"].clone(), inputs["token_ids"], inputs["num_prompt_tokens"],
              **{name: inputs[name] for name in OPTIONS})


def test_reference_on_a_row_computed_by_hand():
    """x = (1, -2, 3, 0.5, -1, 2); prompt [0], output [1, 1, 3]; repetition 2, frequency
    0.5, presence 0.25; biases +1 on token 2, -1 on token 4; the bitmask forbids token 5;
    stop token 3 with min_tokens 5 (output of 3: masked)."""
    processed = process(
        torch.tensor([[1.0, -2.0, 3.0, 0.5, -1.0, 2.0]]), torch.tensor([[0, 1, 1, 3, -1]]),
        torch.tensor([1]), repetition_penalty=torch.tensor([2.0]),
        frequency_penalty=torch.tensor([0.5]), presence_penalty=torch.tensor([0.25]),
        logit_bias_ids=torch.tensor([[2, 4, -1]]),
        logit_bias_values=torch.tensor([[1.0, -1.0, 7.0]]),
        allowed_bitmask=torch.tensor([[0b011111]], dtype=torch.int32),
        stop_token_ids=torch.tensor([[3, -1]]), min_tokens=torch.tensor([5]))
    assert processed.values.tolist() == [[0.5, -5.25, 4.0, INF, -2.0, INF]]
    # token 1: |x| 2 + |r| 4 + |phi c| 1 + |pi| 0.25
    assert processed.scale[0, 1].item() == 7.25
    assert processed.scale[0, 2].item() == 3 + 1 + 4


def test_reference_bitmask_reads_the_least_significant_bit_first_and_nothing_past_it():
    words = torch.tensor([[1, -2**31], [-1, 0]], dtype=torch.int32)
    allowed = bitmask_allowed(words, 70)
    assert allowed[0].nonzero().flatten().tolist() == [0, 63]
    assert allowed[1].nonzero().flatten().tolist() == list(range(32))


def test_reference_min_tokens_counts_the_output_alone():
    kwargs = {"stop_token_ids": torch.tensor([[2], [2]]), "min_tokens": torch.tensor([2, 2])}
    ids = torch.tensor([[0, 1, 3, 4], [0, 1, 3, -1]])          # outputs of 2 and 1 tokens
    values = process(torch.zeros(2, 5), ids, torch.tensor([2, 2]), **kwargs).values
    assert values[0, 2].item() == 0.0 and values[1, 2].item() == INF


def random_batch(seed: int, rows: int, vocab: int, history: int, dtype, processors=PROCESSORS,
                 words: int | None = None):
    rng = np.random.default_rng(seed)
    knobs = Knobs(scale=3.0, masked=0.05, grid=0.25, repeat=0.6, biased=6, stops=3)
    built = [random_row(vocab, history, knobs, rng) for _ in range(rows)]
    return assemble(built, dtype, processors, words=words, history=history)


def _agrees(batch, output) -> dict:
    record = compare("test", batch, batch.inputs, output)
    assert record["wrong"] == 0, record["failure"]
    return record


CASES = [(0, 5, 33, 40, torch.float32), (1, 3, 257, 300, torch.bfloat16),
         (2, 4, 1025, 0, torch.float16), (3, 2, 129, 4096, torch.float32)]


@pytest.mark.parametrize("kernel", [logits_processors_torch, tlp.logits_processors_triton],
                         ids=["torch", "triton"])
@pytest.mark.parametrize("case", CASES, ids=[f"V{c[2]}-L{c[3]}" for c in CASES])
def test_kernels_agree_with_the_reference(kernel, case):
    seed, rows, vocab, history, dtype = case
    batch = random_batch(seed, rows, vocab, history, dtype)
    _agrees(batch, _call(kernel, batch.inputs))
    alone = random_batch(seed, rows, vocab, history, dtype, processors=("repetition", "stop"))
    _agrees(alone, _call(kernel, alone.inputs))


def _launched(batch, launch) -> torch.Tensor:
    inputs = batch.inputs
    return tlp.logits_processors_launch(inputs["logits"].clone(), inputs["token_ids"],
                                        inputs["num_prompt_tokens"], launch=launch,
                                        **{name: inputs[name] for name in OPTIONS})


DESIGN_CASES = [(7, 3, 257, 300, torch.bfloat16, 64, 2), (8, 5, 131, 40, torch.float32, 32, 4),
                (9, 2, 100, 0, torch.float16, 64, 1)]


@pytest.mark.parametrize("case", DESIGN_CASES, ids=[f"V{c[2]}-L{c[3]}" for c in DESIGN_CASES])
def test_triton_launches_agree_bit_for_bit(case):
    """Dense tiles narrower than a row (several column blocks a row, the last one partial)
    and one or several rows a program give the reference's values and the default launch's
    bits; also with only the sparse processors that skip the sort (the stop tokens count
    the history), and with the bitmask alone (the dense kernel alone)."""
    seed, rows, vocab, history, dtype, block, per_program = case
    launch = tlp.Launch(block=block, warps=4, rows=per_program)
    for processors in (PROCESSORS, ("bias", "stop", "bitmask"), ("bitmask",)):
        batch = random_batch(seed, rows, vocab, history, dtype, processors=processors,
                             words=(vocab + 31) // 32 - 1)
        got = _launched(batch, launch)
        _agrees(batch, got)
        assert torch.equal(got, _call(tlp.logits_processors_triton, batch.inputs))


def test_triton_launch_settings_change_no_bit():
    """``with_launch`` (what ``bench --launch`` binds) takes the dense kernel's block and
    warps and the sparse kernel's warps; the sort's warps follow the history."""
    batch = random_batch(10, 3, 65, 20, torch.float32)
    default = _call(tlp.logits_processors_triton, batch.inputs)
    fn = tlp.logits_processors_triton.with_launch(block=2048, warps=4, sparse_warps=8)
    assert torch.equal(_call(fn, batch.inputs), default)
    assert [tlp.sort_warps(n) for n in (0, 1024, 2048, 4096, 16384)] == [4, 8, 16, 32, 32]


def test_the_bound_passes_float32_and_fails_bfloat16_arithmetic():
    """The same processors in float32 stay far inside the bound; computed in bfloat16 they
    leave it."""
    batch = random_batch(5, 6, 257, 64, torch.bfloat16)
    assert _agrees(batch, _call(logits_processors_torch, batch.inputs))["worst_ratio"] < 0.5
    record = compare("bf16", batch, batch.inputs, _call(penalties_in_logits_dtype,
                                                        batch.inputs))
    assert record["wrong"] > 0


def test_the_comparison_demands_minus_inf_exactly_and_finite_elsewhere():
    batch = random_batch(6, 3, 65, 16, DTYPES[0])
    good = _call(logits_processors_torch, batch.inputs)
    masked = good == INF
    assert masked.any() and (~masked).any()
    opened = good.clone()
    opened[tuple(masked.nonzero()[0].tolist())] = 0.0
    closed = good.clone()
    closed[tuple((~masked).nonzero()[0].tolist())] = INF
    for wrong in (opened, closed):
        assert compare("x", batch, batch.inputs, wrong)["wrong"] == 1


def test_a_failure_shows_its_value_and_reference_within_the_terminal_line():
    """The terminal shows a failing check's message cut to its first 300 characters
    (``one_line``): the first failure, with its value and reference, comes before the long
    statement of the bound, even for a row with a long label."""
    batch = random_batch(6, 3, 4099, 16, DTYPES[0])
    batch = Batch(batch.inputs, ["rewards: repetition < 1, negative penalties"] * 3)
    wrong = _call(logits_processors_torch, batch.inputs)
    row, token = wrong.isfinite().nonzero()[-1].tolist()
    wrong[row, token] += 1.0
    record = compare("curated", batch, batch.inputs, wrong)
    assert "(1 value wrong)" in record["failure"] and "reference " in record["failure"]
    shown = one_line(summarise([record] * 40, "curated rows").message)
    assert record["failure"] in shown, shown


def test_history_buckets_and_the_widest_history():
    assert [tlp.history_bucket(n) for n in (0, 1, 32, 33, 2048, 4097)] == [5, 5, 5, 6, 11, 13]
    with pytest.raises(ValueError, match="at most"):
        tlp.logits_processors_triton(torch.zeros(1, 4), torch.zeros(1, tlp.MAX_HISTORY + 1,
                                                                    dtype=torch.int64),
                                     torch.zeros(1, dtype=torch.int64))



def test_biases_past_the_first_slots_on_history_tokens():
    """More biased tokens than the sparse kernel's first slots (BIAS_SLOTS), every one in the
    history's output under all three penalties: their dense values are read (into the
    stash) before the history's values are written over them, so the bias is added to the
    logit, not to a penalised value."""
    generator = torch.Generator().manual_seed(12)
    vocab, history, biased = 64, 48, 3 * tlp.BIAS_SLOTS
    logits = torch.randn(2, vocab, generator=generator) * 3
    token_ids = torch.arange(history).remainder(biased).repeat(2, 1)    # each twice
    bias_ids = torch.stack([torch.randperm(biased, generator=generator) for _ in range(2)])
    kwargs = dict(repetition_penalty=torch.tensor([1.7, 0.6]),
                  frequency_penalty=torch.tensor([0.4, -0.3]),
                  presence_penalty=torch.tensor([0.5, 0.2]), logit_bias_ids=bias_ids,
                  logit_bias_values=torch.randn(2, biased, generator=generator) * 2)
    prompt = torch.tensor([0, 24])                 # all output; then half prompt, half output
    got = tlp.logits_processors_triton(logits.clone(), token_ids, prompt, **kwargs)
    want = process(logits, token_ids, prompt, **kwargs)
    assert torch.all((got.double() - want.values).abs() <= want.tolerance)
