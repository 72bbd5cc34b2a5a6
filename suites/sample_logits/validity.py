"""Validity of family ``sample-logits``: exact checks, no statistics and no alpha.

Every call is validated by the runner (a tensor of shape [B], int32/int64, on the device,
ids in [0, V), never a -inf logit, greedy rows equal to the argmax). This check adds:

* edge cases where kernels break, each called twice with the same seed under two
  allocator poisons (the same ids are due): V = 1, a single finite logit, V = 2, a flat
  row at top-k 1 (every tie kept), odd shapes, a row of V = 32001, huge ranges, bf16 and
  fp16 logits, greedy rows mixed in; min-p edge cases for a kernel that takes min_p;
* many draws from rows that mask almost every token (top-k 4, top-p 0.3, -inf masks): a
  draw outside the reference's possibly kept set is a failure. A kernel that returns a
  masked token at a per-draw rate above the stated minimum is caught with probability
  ``budget.power``.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.calls import rows_per_call
from sampling_harness.families import accepts
from sampling_harness.stats.binomial import never_rate
from sampling_harness.suites.sample_logits.draws import count_tokens, demand_possible
from sampling_harness.suites.sample_logits.rows import Rows, gaussian, grid, masked
from sampling_harness.verdict import Outcome

MASKING_VOCAB = 4099


def edge_cases(seed: int) -> dict[str, Rows]:
    rng = np.random.default_rng(seed)
    lone = np.full(4099, -np.inf)
    lone[4098] = 0.5
    huge = rng.uniform(-6e4, 6e4, 1031) * (rng.random(1031) < 0.5)
    odd = {f"row {i}": (gaussian(129, rng), t, k, p) for i, (t, k, p) in enumerate(
        [(1.0, 0, 1.0), (0.0, 5, 0.9), (0.3, 128, 0.5), (2.0, 129, 1.0), (1.0, 1, 1.0),
         (0.7, -1, 1e-4), (1.0, 130, 0.999)])}
    return {
        "V=1": Rows.of({"one token": (np.zeros(1), 1.0, 0, 1.0),
                        "one token, greedy": (np.zeros(1), 0.0, 1, 0.5)}),
        "a single finite logit at the row's end": Rows.of({"lone": (lone, 1.0, 0, 0.9)}),
        "V=2": Rows.of({"flat": (np.zeros(2), 1.0, 0, 1.0), "k=1": (np.zeros(2), 1.0, 1, 1.0),
                        "greedy tie": (np.zeros(2), 0.0, 0, 1.0)}),
        "flat row at top-k 1 (every tie kept)": Rows.of({"flat": (np.zeros(257), 1.0, 1, 1.0)}),
        "odd shapes (B=7, V=129)": Rows.of(odd),
        "one row, V=32001, top-k 50, top-p 0.9": Rows.of({"big": (
            gaussian(32001, rng), 0.8, 50, 0.9)}),
        "huge range, fp16": Rows.of({"huge": (huge, 1.0, 0, 1.0), "huge, T=5": (
            huge, 5.0, 10, 0.9)}, torch.float16),
        "ties, bf16, greedy and sampled": Rows.of({"sampled": (grid(1031, rng), 1.0, 7, 0.8),
                                                   "greedy": (grid(1031, rng), 0.0, 0, 1.0)},
                                                  torch.bfloat16),
    }


def min_p_edge_cases(seed: int) -> Rows:
    """For a kernel that takes min_p: every token tied with the max at min-p 1, min-p with a
    greedy row, with -inf entries, with top-k 1 on ties, and a row with min-p 0 beside them."""
    rng = np.random.default_rng(seed)
    v = 257
    return Rows.of({"flat row, min-p 1 (every tie kept)": (np.zeros(v), 1.0, 0, 1.0, 1.0),
                    "greedy, min-p 0.9": (gaussian(v, rng), 0.0, 0, 1.0, 0.9),
                    "masked, min-p 0.05, T=0.5": (masked(v, rng), 0.5, 0, 0.9, 0.05),
                    "ties, top-k 1, min-p 0.3": (grid(v, rng), 1.0, 1, 1.0, 0.3),
                    "no min-p beside them": (gaussian(v, rng), 1.0, 0, 1.0, 0.0)})


def masking_rows(seed: int) -> Rows:
    rng = np.random.default_rng(seed)
    v = MASKING_VOCAB
    return Rows.of({"top-k 4": (gaussian(v, rng), 1.0, 4, 1.0),
                    "top-p 0.3": (gaussian(v, rng, 3.0), 0.8, 0, 0.3),
                    "top-k 64, top-p 0.5": (gaussian(v, rng), 1.3, 64, 0.5),
                    "90% -inf, top-k 8": (masked(v, rng, 0.9), 1.0, 8, 1.0)})


def validity(ctx) -> Outcome:
    seeds = ctx.seeds()
    cases = edge_cases(ctx.seed)
    if accepts(ctx.runner.kernel.fn, "min_p"):
        cases["min-p edge cases"] = min_p_edge_cases(ctx.seed)
    for rows in cases.values():
        ctx.runner.call_twice(rows.inputs(ctx.device, rows.kinds), next(seeds))

    rows = masking_rows(ctx.seed)
    masked_per_row = (rows.law.inclusive == 0).sum(axis=1)
    per_row_draws = max(1, -(-ctx.budget.masked_draws // int(masked_per_row.sum())))
    ctx.runner.call_twice(rows.inputs(ctx.device, rows_per_call(ctx, rows.vocab, rows.kinds)),
                          next(seeds))
    counts = count_tokens(ctx, rows, per_row_draws)
    demand_possible(rows, counts)
    draws = int(per_row_draws * masked_per_row.sum())
    return Outcome(
        True, f"{ctx.runner.calls} calls valid; no masked token in {draws:,} draws on masked "
              "tokens; same seed gave the same ids under two allocator poisons",
        samples=draws, min_detectable_effect=never_rate(draws, ctx.budget.power),
        effect="per-draw rate of returning a masked token",
        details={"edge_cases": list(cases), "masking_rows": list(rows.names)})
