"""Greedy rows of family ``sample-logits``: exact, against the float64 argmax.

A row with temperature 0 returns the argmax of its logits, the lowest index on ties,
whatever its top-k and top-p. Batches mix greedy rows (every other row) with sampled rows
of the same logits, in the three input dtypes, with two or three tokens tied at the maximum
at random positions (bf16 makes more ties of its own), -inf entries, and top-k / top-p
settings that would matter if the row were sampled. Every greedy row must equal numpy's
argmax of the exact logits; each batch is called twice under two allocator poisons.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.suites.sample_logits.rows import Rows
from sampling_harness.verdict import Outcome

SHAPES = ((24, 37), (16, 1031), (4, 32001))
DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def tied_rows(batch: int, vocab: int, dtype: torch.dtype, seed: int) -> Rows:
    rng = np.random.default_rng(seed)
    rows = {}
    for r in range(batch):
        x = rng.standard_normal(vocab) * 2.0
        x[rng.random(vocab) < 0.2] = -np.inf
        tied = rng.choice(vocab, size=min(vocab, int(rng.integers(2, 4))), replace=False)
        x[tied] = 8.0
        t = 0.0 if r % 2 == 0 else float(rng.choice([0.5, 1.0, 1.7]))
        rows[f"row {r}"] = (x, t, int(rng.choice([0, 1, 2, vocab])), float(
            rng.choice([1.0, 0.5, 1e-3])))
    return Rows.of(rows, dtype)


def greedy(ctx) -> Outcome:
    seeds, compared, batches = ctx.seeds(), 0, []
    for i, ((batch, vocab), dtype) in enumerate(
            (shape, dtype) for shape in SHAPES for dtype in DTYPES):
        rows = tied_rows(batch, vocab, dtype, ctx.seed + i)
        ids = ctx.runner.call_twice(rows.inputs(ctx.device, batch), next(seeds))
        ids = torch.as_tensor(ids).cpu().numpy()
        greedy_rows = rows.temperature == 0
        expected = np.argmax(rows.logits, axis=1)  # numpy: the first maximal index
        wrong = np.flatnonzero(greedy_rows & (ids != expected))
        if wrong.size:
            r = int(wrong[0])
            return Outcome(False, f"greedy row {r} of a {batch}x{vocab} {dtype} batch returned "
                                  f"{int(ids[r])}, not the argmax {int(expected[r])} "
                                  f"({wrong.size} greedy rows wrong)",
                           samples=compared, min_detectable_effect=1.0,
                           effect="greedy rows differing from the argmax (any is a failure)")
        compared += int(greedy_rows.sum())
        batches.append(f"{batch}x{vocab} {dtype}")
    return Outcome(True, f"{compared} greedy rows equal the argmax (lowest index on ties) in "
                         f"{len(batches)} mixed batches, under two allocator poisons",
                   samples=compared, min_detectable_effect=1.0,
                   effect="greedy rows differing from the argmax (any is a failure)",
                   details={"batches": batches})
