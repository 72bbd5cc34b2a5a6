"""Greedy requests compared exactly with the float64 reference.

A greedy request's output is a function of its inputs alone (the argmax, lowest index on
ties), so every greedy row a kernel returns must equal the reference's exactly, bit for bit:
no statistic, no alpha, and one wrong row fails the check. Each batch is called twice under
two allocator poisons (``runner.call_twice``), so a row that reads uninitialised memory
differs between the calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from sampling_harness.verdict import Outcome

# (batch name, the call's inputs, the greedy rows, expected(row, width) -> int64 [width])
GreedyBatch = tuple[str, dict, Iterable[int], Callable[[int, int], np.ndarray]]


def greedy_equal(ctx, batches: Iterable[GreedyBatch]) -> Outcome:
    """Call every batch twice (one seed of ``ctx.seeds()`` each) and compare each greedy
    row of the output [B, W] with ``expected(row, W)``; fail at the first row that differs."""
    seeds, compared = ctx.seeds(), 0
    for name, inputs, rows, expected in batches:
        out = ctx.runner.call_twice(inputs, next(seeds)).cpu()
        for b in rows:
            want = expected(b, out.shape[1])
            if not np.array_equal(out[b].numpy(), want):
                return Outcome(False, f"{name}: greedy request {b} returned "
                                      f"{out[b].tolist()}, expected {want.tolist()}")
            compared += 1
    return Outcome(True, f"{compared} greedy requests equal the reference exactly",
                   samples=compared, min_detectable_effect=1.0,
                   effect="wrong greedy rows (any one fails)")
