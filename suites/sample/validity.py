"""Validity of family ``sample``: exact checks, no statistics and no alpha.

Every call is validated by the runner (a tensor of shape [B], int32/int64, on the device,
ids in [0, V), never a zero-probability token). This check adds the edge cases where
kernels break, each called twice with the same seed under two allocator poisons (the
same ids are due: an unwritten id or a nondeterministic kernel differs), and a large batch
of rows that are almost all zeros: a kernel that ever returns a masked token at a per-draw
rate above the stated minimum is caught with probability 0.99.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.calls import rows_per_call
from sampling_harness.stats.binomial import never_rate
from sampling_harness.strategies import normalised
from sampling_harness.suites.sample.distributions import sparse_rows
from sampling_harness.verdict import Outcome

SPARSE_VOCAB, SPARSE_SUPPORT = 4099, 4


def edge_cases(seed: int) -> dict[str, np.ndarray]:
    """Batches whose answer is forced or whose shape is awkward."""
    rng = np.random.default_rng(seed)
    hot = np.zeros((6, 4099), dtype=np.float32)
    hot[np.arange(6), [0, 1, 2047, 2048, 4097, 4098]] = 1.0
    return {
        "single token (V=1)": np.ones((3, 1), dtype=np.float32),
        "one-hot rows at block edges": hot,
        "one row, V=32001": normalised(rng.random(32001))[None, :],
        "two tokens, V=2": np.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32),
        "odd shapes (B=7, V=129)": np.stack([normalised(rng.random(129)) for _ in range(7)]),
        # widths a compiler specialises (multiples of 16: vector loads, other layouts), in
        # one or two chunks of a chunked kernel (Triton 3.6 failed to compile one such)
        "aligned rows, V=1024": np.stack([normalised(rng.random(1024)) for _ in range(3)]),
        "aligned one-hot rows, V=4096": np.eye(4096, dtype=np.float32)[[0, 2047, 2048, 4095]],
    }


def validity(ctx) -> Outcome:
    seeds = ctx.seeds()
    cases = edge_cases(ctx.seed)
    for table in cases.values():
        ctx.runner.call_twice({"probs": torch.as_tensor(table, device=ctx.device)}, next(seeds))

    per_call = rows_per_call(ctx, SPARSE_VOCAB)
    zeros_per_row = SPARSE_VOCAB - SPARSE_SUPPORT
    calls = max(1, -(-ctx.budget.zero_draws // (per_call * zeros_per_row)))
    base = torch.as_tensor(sparse_rows(SPARSE_VOCAB, min(per_call, 4096), SPARSE_SUPPORT,
                                       ctx.seed), device=ctx.device)
    probs = base.repeat(-(-per_call // base.shape[0]), 1)[:per_call]

    ctx.runner.call_twice({"probs": probs}, next(seeds))
    for _ in range(calls - 1):
        ctx.runner.call({"probs": probs}, next(seeds))  # the runner fails any masked token drawn

    draws = (calls + 1) * probs.shape[0] * zeros_per_row
    return Outcome(
        True, f"{ctx.runner.calls} calls valid; no zero-probability token in {draws:,} draws "
              "on masked tokens; same seed gave the same ids under two allocator poisons",
        samples=draws, min_detectable_effect=never_rate(draws, ctx.budget.power),
        effect="per-draw rate of returning a zero-probability token",
        details={"edge_cases": list(cases)})
