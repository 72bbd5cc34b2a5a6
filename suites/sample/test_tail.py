"""Tail of family ``sample``: do rare tokens win as often as their probability says?

At each rarity scale r, a row holds one head token and M rare tokens of probability r times
the head's. The count of rare wins in n rows is Binomial(n, R), R the exact rare mass. The
test is exact and equal-tailed, and group-sequential: it looks at 1/8, 1/4, 1/2 and all of
the planned rows, each look at alpha / 4 (Bonferroni), and stops at the first rejection.
The planned n makes the expected rare wins ``budget.tail_expected``: noise that cannot go
below a floor q_min suppresses rare wins once r << q_min (float32 exponential_: r < 6e-8).
Detecting a ratio r costs about tail_expected / r noise draws.

Sharded under torchrun (``harness.distributed``): by each look, rank r of W has drawn its
share n_r(look) = floor(look / W) + [r < look mod W] of the look's rows with its own seeds;
the ranks' (rare wins, rows) are summed before the look's test, so each look tests exactly
the rows the schedule states, and every rank takes the same decision to stop.
"""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch

from harness.distributed import SINGLE, Shard, merged
from harness.plots import tail_plot
from harness.stats.binomial import (
    equal_tailed_p,
    fraction_schedule,
    looks_alpha,
    min_detectable_deficit,
)
from harness.stats.multiple import adjusted_p, bonferroni
from harness.verdict import Outcome
from reference.categorical import exact_probs, rare_mass
from suites.sample.distributions import tail_row
from suites.sample.draws import rows_per_call

pytestmark = pytest.mark.family("sample")

LOOKS = 4
TAIL_MAX_VOCAB = 2**17


def _draw_until(draw, local: list[int], target: int) -> torch.Tensor:
    """Draw until this rank's rows reach ``target``; its (rare wins, rows) so far."""
    while local[1] < target:
        wins, rows = draw(target - local[1])
        local[0], local[1] = local[0] + wins, local[1] + rows
    return torch.tensor(local, dtype=torch.int64)


def sequential_wins(draw, planned: int, mass: float, alpha_look: float,
                    shard: Shard = SINGLE):
    """Draw up to ``planned`` rows, looking at the schedule's fractions; stop at the first
    look that rejects. ``draw(n)`` makes one call of at most n rows and returns (rare wins,
    rows drawn). Returns (wins, rows drawn, smallest p-value over the looks made), over all
    ranks when ``shard`` is one rank's part (``draw`` then draws with that rank's seeds)."""
    looks = [math.ceil(f * planned) for f in fraction_schedule(LOOKS)]
    local = [0, 0]                      # this rank's rare wins and rows
    p_value = 1.0
    for look in looks:
        more = partial(_draw_until, draw, local, shard.size(look))
        wins, drawn = merged(shard, f"tail look at {look} of {planned} rows", more).tolist()
        p_value = min(p_value, equal_tailed_p(wins, drawn, mass))
        if p_value <= alpha_look:
            break
    return wins, drawn, p_value


def scale_record(scale: float, vocab: int, mass: float, planned: int, found, alpha_look: float,
                 power: float) -> dict:
    """One scale's row of the report, with the exact smallest detectable deficit."""
    wins, drawn, p_value = found
    return {"scale": scale, "vocab": vocab, "rare_mass": mass, "rows": drawn,
            "planned_rows": planned, "rare_wins": wins, "expected": mass * drawn,
            "p_value": p_value,
            "min_detectable_deficit": min_detectable_deficit(planned, mass, alpha_look, power)}


def tail_outcome(ctx, scales: list[dict], alpha_look: float, law: str) -> Outcome:
    """The verdict over the scales (each a look-Bonferroni p-value at ``alpha_look``)."""
    failed = [s for s in scales if s["p_value"] <= alpha_look]
    if failed:
        s = failed[0]
        message = (f"rare tokens at {s['scale']:g} x head won {s['rare_wins']} times in "
                   f"{s['rows']:,} rows where {s['expected']:.1f} were expected "
                   f"(p = {s['p_value']:.2g})")
    else:
        message = (f"rare-token wins match {law} at scales "
                   + ", ".join(f"{s['scale']:g}" for s in scales))
    return Outcome(not failed, message,
                   statistic=float(min(s["rare_wins"] / s["expected"] for s in scales)),
                   p_value=adjusted_p([s["p_value"] * LOOKS for s in scales]), alpha=ctx.alpha,
                   samples=sum(s["rows"] * s["vocab"] for s in scales),
                   min_detectable_effect=max(s["min_detectable_deficit"] for s in scales),
                   effect="relative shortfall of the rare mass (worst scale)",
                   details={"scales": scales, "alpha_per_look": alpha_look,
                            "plot": tail_plot(scales, f"rare mass per scale against {law}")})


def tail(ctx) -> Outcome:
    budget = ctx.budget
    alpha_look = looks_alpha(bonferroni(ctx.alpha, len(budget.tail_scales)), LOOKS)
    seeds = ctx.rank_seeds()
    scales = []
    for scale in budget.tail_scales:
        row, rare = tail_row(scale, TAIL_MAX_VOCAB, ctx.seed)
        mass = rare_mass(exact_probs(torch.as_tensor(row)[None])[0], rare)
        planned = math.ceil(budget.tail_expected / mass)
        ctx.plan(ctx.shard.size(planned) * row.size)
        probs = torch.as_tensor(row, device=ctx.device).repeat(rows_per_call(ctx, row.size), 1)
        rare_t = torch.as_tensor(rare, device=ctx.device)

        def draw(rows, probs=probs, rare_t=rare_t):
            batch = probs[:min(probs.shape[0], rows)]
            ids = ctx.runner.call({"probs": batch}, next(seeds))
            return int(rare_t[ids].sum()), batch.shape[0]

        found = sequential_wins(draw, planned, mass, alpha_look, ctx.shard)
        scales.append(scale_record(scale, int(row.size), mass, planned, found, alpha_look,
                                   budget.power))
    return tail_outcome(ctx, scales, alpha_look, "the exact rare mass")


@pytest.mark.statistical
def test_tail(check):
    check.run(tail)
