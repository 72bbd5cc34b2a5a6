"""Tail of family ``sample``: do rare tokens win as often as their probability says?

At each rarity scale r, a row holds one head token and M rare tokens of probability r times
the head's. The count of rare wins in n rows is Binomial(n, R), R the exact rare mass,
tested by the exact, equal-tailed, group-sequential test of harness/checks/rare_wins.py (looks at
1/8, 1/4, 1/2 and all of the planned rows, each at alpha / 4; sharded over torchrun ranks
look by look).
The planned n makes the expected rare wins ``budget.tail_expected``: noise that cannot go
below a floor q_min suppresses rare wins once r << q_min (float32 exponential_: r < 6e-8).
Detecting a ratio r costs about tail_expected / r noise draws.
"""

from __future__ import annotations

import torch

from sampling_harness.checks.calls import rows_per_call
from sampling_harness.checks.rare_wins import scale_sweep, tail_outcome, tail_row
from sampling_harness.reference.categorical import exact_probs, rare_mass
from sampling_harness.verdict import Outcome


def tail(ctx) -> Outcome:
    seeds = ctx.rank_seeds()

    def setup(scale, vocab):
        row, rare = tail_row(scale, vocab, ctx.seed)
        probs = torch.as_tensor(row, device=ctx.device).repeat(rows_per_call(ctx, row.size), 1)
        rare_t = torch.as_tensor(rare, device=ctx.device)

        def draw(rows):
            batch = probs[:min(probs.shape[0], rows)]
            ids = ctx.runner.call({"probs": batch}, next(seeds))
            return int(rare_t[ids].sum()), batch.shape[0]
        return rare_mass(exact_probs(torch.as_tensor(row)[None])[0], rare), int(row.size), draw

    scales, alpha_look = scale_sweep(ctx, ctx.budget.tail_scales, ctx.budget.tail_expected,
                                     setup)
    return tail_outcome(ctx, scales, alpha_look, "the exact rare mass")
