"""Batch invariance of family ``logits-processors``: a row's result depends on its own inputs
only, bit for bit. Exact, no alpha.

Each trial draws a shape (V just off a power of two, a dtype, the processors passed: all
six in even trials, any subset in odd ones, the table widths) and a base batch of 2 to 6
rows (suites/logits_processors/strategies.py), mixing rows under a grammar with
unconstrained ones whenever the bitmask is passed. The base batch is called, then every row
alone, then the batch edited: rows shuffled, fresh rows appended, some rows replaced by
fresh ones, some removed. Every row the edit left alone must come out exactly as in the
base call (the tables keep their widths: a row's padding is part of its inputs). A kernel
whose result for a row follows its batch-mates (a bitmask built per batch, a fast path
taken when no row needs a processor) fails at the first edit that moves it.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.suites.logits_processors.batches import (
    DTYPES,
    PROCESSORS,
    Batch,
    assemble,
    bits,
    concatenated,
    on_device,
    rows_of,
)
from sampling_harness.suites.logits_processors.strategies import Knobs, random_row
from sampling_harness.verdict import Outcome

VOCABS = (31, 33, 127, 129, 257, 1023, 1025)
HISTORY, BIAS_SLOTS, STOP_SLOTS = 64, 16, 4


class Moved(Exception):
    """A row's result changed with its batch."""


def trial_shape(trial: int, rng: np.random.Generator) -> dict:
    """A trial's shared shape: V, dtype, processors, bitmask width, row knobs."""
    vocab = int(rng.choice(VOCABS))
    processors = set(PROCESSORS) if trial % 2 == 0 else {
        p for p in PROCESSORS if rng.random() < 0.5}
    knobs = Knobs(scale=float(10.0 ** rng.uniform(-1, 2)), masked=0.1, grid=0.0, repeat=0.5,
                  biased=BIAS_SLOTS, stops=STOP_SLOTS)
    words = -(-vocab // 32) - int(rng.integers(0, 2))
    return {"vocab": vocab, "dtype": DTYPES[trial % len(DTYPES)], "processors": processors,
            "knobs": knobs, "words": words}


def fresh(shape: dict, rng: np.random.Generator, count: int, constrained=None) -> Batch:
    """``count`` new rows of the shape (``constrained``: per row, under a grammar or not)."""
    rows = []
    for i in range(count):
        row = random_row(shape["vocab"], HISTORY, shape["knobs"], rng)
        under = rng.random() < 0.5 if constrained is None else constrained[i]
        row.bitmask = None if not under else (
            rng.integers(-2**31, 2**31, size=shape["words"]).astype(np.int32)
            if rng.random() < 0.8 else bits(shape["vocab"], [int(rng.integers(shape["vocab"]))]))
        rows.append(row)
    return assemble(rows, shape["dtype"], shape["processors"], words=shape["words"],
                    history=HISTORY, bias_slots=BIAS_SLOTS, stop_slots=STOP_SLOTS)


def edits(base: Batch, shape: dict, rng: np.random.Generator):
    """(name, edited batch, {row in edited: row in base}) for each edit of ``base``."""
    count = len(base.labels)
    for row in range(count):
        yield f"row {row} called alone", rows_of(base, [row]), {0: row}
    order = rng.permutation(count).tolist()
    yield f"rows shuffled to {order}", rows_of(base, order), dict(enumerate(order))
    extra = int(rng.integers(1, 4))
    yield (f"{extra} fresh row(s) appended", concatenated(base, fresh(shape, rng, extra)),
           {i: i for i in range(count)})
    replaced = set(rng.choice(count, size=max(1, count // 2), replace=False).tolist())
    new = fresh(shape, rng, count)
    keep = [i for i in range(count) if i not in replaced]
    mixed = concatenated(rows_of(base, keep), rows_of(new, sorted(replaced)))
    yield (f"rows {sorted(replaced)} replaced by fresh rows", mixed,
           {j: i for j, i in enumerate(keep)})
    kept = sorted(rng.choice(count, size=int(rng.integers(1, count)), replace=False).tolist())
    yield f"only rows {kept} kept", rows_of(base, kept), dict(enumerate(kept))


def _result(ctx, batch: Batch) -> torch.Tensor:
    return ctx.runner.call(on_device(batch.inputs, ctx.device), ctx.seed)


def _compare(base: Batch, before: torch.Tensor, after: torch.Tensor, pairs: dict,
             name: str) -> int:
    for j, i in pairs.items():
        differ = (after[j] != before[i]).nonzero()
        if differ.numel():
            token = int(differ[0, 0])
            raise Moved(f"row {i} ({base.labels[i]}, {base.dtype}) of a batch of "
                        f"{len(base.labels)} gave {before[i, token].item()!r} at token "
                        f"{token}, but {after[j, token].item()!r} as row {j} after: {name} "
                        f"({differ.shape[0]} values moved)")
    return len(pairs)


def batch_invariance(ctx) -> Outcome:
    rng = np.random.default_rng(ctx.seed)
    compared = calls = 0
    trials = ctx.budget.invariance_trials
    try:
        for trial in range(trials):
            shape = trial_shape(trial, rng)
            count = int(rng.integers(2, 7))
            base = fresh(shape, rng, count,
                         constrained=[i % 2 == 0 for i in rng.permutation(count)])
            before = _result(ctx, base)
            for name, edited, pairs in edits(base, shape, rng):
                compared += _compare(base, before, _result(ctx, edited), pairs, name)
                calls += 1
    except Moved as moved:
        return Outcome(False, f"a row's result moved with its batch (compared bit for bit, no "
                              f"tolerance): {moved}",
                       samples=compared, effect="any row whose result moves with its batch "
                                                "(exact)")
    return Outcome(True, f"{compared} row results bit for bit unchanged (no tolerance: a "
                         f"row's own inputs give one result) over {trials} base batches and "
                         f"{calls} edited ones (rows alone, shuffled, appended, replaced, "
                         "removed)", samples=compared, min_detectable_effect=1.0,
                   effect="any row whose result moves with its batch (exact)")
