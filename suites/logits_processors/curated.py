"""The curated checks of family ``logits-processors``: each processor alone and with the
others, on rows that make each field bug visible (suites/logits_processors/rows.py), in
float32, bfloat16 and float16, V = ``budget.curated_vocab``. Every value is compared with
the float64 reference within the contract's bound (suites/logits_processors/compare.py).
Exact: no alpha.

* penalties: repetition, frequency and presence each alone, then all three (negative,
  zero and positive seen logits; a token repeated 300 times; prompt-only tokens; padding
  after a short history with ids 0 and V - 1 unseen; ids 0 and V - 1 seen; empty, prompt-
  only and output-only histories; rewards; neutral settings; large logits);
* logit_bias: the bias alone, then before the penalties (ids 0 and V - 1; a bias flipping
  a seen logit's sign; exact cancellation; +-100; 16 biases; a tiny bias on a large logit);
* bitmask: bits at word edges (token 0, the sign bit, V - 1, 32 k - 1 and 32 k), random
  words, nothing allowed, mixed with unconstrained rows; W words covering V, W - 2 (a
  bitmask narrower than the logits: the tail must be -inf) and W + 1;
* min_tokens: outputs of min - 1, min and min + 1 tokens, min 0, stop ids 0 and V - 1,
  a long prompt with a short output (only the output counts), padded stop lists;
* combined: every row above and rows where the processors meet, all six processors on,
  with the bitmask covering V and narrower.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.suites.logits_processors import rows as curated_rows
from sampling_harness.suites.logits_processors.batches import (
    DTYPES,
    PENALTIES,
    PROCESSORS,
    assemble,
    words_for,
)
from sampling_harness.suites.logits_processors.compare import call, summarise
from sampling_harness.verdict import Outcome


def _run(ctx, rows_for, settings: list[tuple[str, set, dict]], what: str) -> Outcome:
    """Every (name, processors, widths) setting in every dtype on the rows ``rows_for``
    draws; one comparison per call."""
    vocab = ctx.budget.curated_vocab
    records = []
    for i, dtype in enumerate(DTYPES):
        rows = rows_for(vocab, np.random.default_rng(ctx.seed + i))
        for name, processors, widths in settings:
            batch = assemble(rows, dtype, processors, **widths)
            records.append(call(ctx, name, batch))
    return summarise(records, what)


def penalties(ctx) -> Outcome:
    padded = {"history": 320}       # longer than every row's history: padding at every end
    settings = [(f"{p} alone", {p}, padded) for p in sorted(PENALTIES)]
    settings.append(("all three penalties", set(PENALTIES), padded))
    return _run(ctx, curated_rows.penalty_rows, settings,
                "repetition, frequency and presence alone and together, three dtypes")


def logit_bias(ctx) -> Outcome:
    settings = [("bias alone", {"bias"}, {"bias_slots": 20}),
                ("bias and penalties", {"bias"} | PENALTIES, {"bias_slots": 20})]
    return _run(ctx, curated_rows.bias_rows, settings,
                "the logit bias alone and before the penalties, three dtypes")


def bitmask(ctx) -> Outcome:
    words = words_for(ctx.budget.curated_vocab)
    settings = [(f"bitmask of {w} words", {"bitmask"}, {"words": w})
                for w in (words, words - 2, words + 1)]
    return _run(ctx, curated_rows.bitmask_rows, settings,
                f"bitmasks of {words}, {words - 2} and {words + 1} words over V = "
                f"{ctx.budget.curated_vocab}, constrained and unconstrained rows mixed, "
                "three dtypes")


def min_tokens(ctx) -> Outcome:
    settings = [("stop tokens", {"stop"}, {"stop_slots": 4, "history": 16})]
    return _run(ctx, curated_rows.stop_rows, settings,
                "stop tokens around min_tokens, three dtypes")


def _every_row(vocab: int, rng: np.random.Generator) -> list:
    return [row for build in (curated_rows.penalty_rows, curated_rows.bias_rows,
                              curated_rows.bitmask_rows, curated_rows.stop_rows,
                              curated_rows.interaction_rows) for row in build(vocab, rng)]


def combined(ctx) -> Outcome:
    words = words_for(ctx.budget.curated_vocab)
    settings = [(f"all processors, bitmask of {w} words", set(PROCESSORS), {"words": w})
                for w in (words, words - 2)]
    return _run(ctx, _every_row, settings,
                "every processor on every curated row and where they meet, three dtypes")
