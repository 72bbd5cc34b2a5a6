"""The large-vocabulary check of family ``logits-processors`` (GPU only): a busy engine
step at V = ``budget.large_vocab`` (151936, Qwen's padded vocabulary) with
``budget.large_rows`` rows and histories of ``budget.large_history`` tokens, float32 and
bfloat16 logits, every processor on. Half the rows are under a grammar whose bitmask was
sized for Qwen's tokenizer (151669 tokens, 4740 words: the 256 padded ids past its 151680
bits must come out -inf in every row), the others unconstrained; histories mix a hot pool
of repeated tokens with rare ones, ids 0 and V - 1 among them; every row holds biases and
stop tokens, min_tokens at and around the output's length. Calls hold at most
``ctx.max_call_elements`` logits (rows are independent, so the batch is called in slices).
Exact: no alpha."""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.suites.logits_processors.batches import (
    PROCESSORS,
    Batch,
    assemble,
    rows_of,
)
from sampling_harness.suites.logits_processors.compare import call, summarise
from sampling_harness.suites.logits_processors.strategies import Knobs, random_row
from sampling_harness.verdict import Outcome

TOKENIZER_VOCAB = 151669          # Qwen3's tokenizer; its logits are 151936 wide
BUSY = Knobs(scale=3.0, masked=0.0, grid=0.0, repeat=0.5, biased=8, stops=4)


def large_batch(rows: int, vocab: int, history: int, dtype: torch.dtype, seed: int) -> Batch:
    """The check's batch: ``random_row``s of a busy step with full histories, every even
    row under a random grammar, the bitmask as wide as the tokenizer's words."""
    rng = np.random.default_rng(seed)
    built = [random_row(vocab, history, BUSY, rng, full=True) for _ in range(rows)]
    words = -(-min(vocab, TOKENIZER_VOCAB) // 32)
    for i, row in enumerate(built):
        row.bitmask = None if i % 2 else rng.integers(-2**31, 2**31, size=words).astype(
            np.int32)
    return assemble(built, dtype, PROCESSORS, words=words, history=history)


def large_vocab(ctx) -> Outcome:
    budget = ctx.budget
    per_call = max(1, min(budget.large_rows, ctx.max_call_elements // budget.large_vocab))
    records = []
    for i, dtype in enumerate((torch.float32, torch.bfloat16)):
        batch = large_batch(budget.large_rows, budget.large_vocab, budget.large_history,
                            dtype, ctx.seed + i)
        for start in range(0, budget.large_rows, per_call):
            part = rows_of(batch, list(range(start, min(start + per_call, budget.large_rows))))
            records.append(call(ctx, f"{budget.large_rows}x{budget.large_vocab}, rows "
                                     f"{start}-{start + len(part.labels) - 1}", part))
    return summarise(records, f"{budget.large_rows} rows of V = {budget.large_vocab}, "
                              f"histories of {budget.large_history}, float32 and bfloat16")
