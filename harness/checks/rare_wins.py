"""Counting rare events against their exact rate: the group-sequential binomial test shared by
the tail checks (rare-token wins in ``sample``, ``sample-logits``, ``rejection``'s recovered
tokens, ``tree-rejection``'s first tokens and ``spec-decode``'s proposer; accepted drafts of
tiny p/q in ``rejection``), and the tail row they draw rare tokens from (``tail_row``).

Model: at each scale, ``n`` independent trials each give an event with probability ``mass``
(the exact rare mass, or the exact acceptance probability). The count is Binomial(n, mass)
under H0. The test is exact and equal-tailed, and group-sequential: it looks at 1/8, 1/4, 1/2
and all of the planned trials, each look at alpha / 4 (Bonferroni over the looks), and stops
at the first rejection. A look's p-value is ``sampling_harness.stats.binomial.equal_tailed_p``.

Sharded under torchrun (``sampling_harness.scale.distributed``): by each look, rank r of W has
drawn its
share n_r(look) = floor(look / W) + [r < look mod W] of the look's trials with its own seeds;
the ranks' (events, trials) are summed before the look's test, so each look tests exactly
the trials the schedule states, and every rank takes the same decision to stop.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import torch

from sampling_harness.report.plots import tail_plot
from sampling_harness.scale.distributed import SINGLE, Shard, merged
from sampling_harness.stats.binomial import (
    equal_tailed_p,
    fraction_schedule,
    looks_alpha,
    min_detectable_deficit,
    min_detectable_rate,
)
from sampling_harness.stats.multiple import adjusted_p, bonferroni
from sampling_harness.strategies.probs import normalised
from sampling_harness.verdict import Outcome

LOOKS = 4


def _draw_until(draw, local: list[int], target: int) -> torch.Tensor:
    """Draw until this rank's trials reach ``target``; its (events, trials) so far."""
    while local[1] < target:
        wins, rows = draw(target - local[1])
        local[0], local[1] = local[0] + wins, local[1] + rows
    return torch.tensor(local, dtype=torch.int64)


def sequential_wins(draw, planned: int, mass: float, alpha_look: float,
                    shard: Shard = SINGLE):
    """Draw up to ``planned`` trials, looking at the schedule's fractions; stop at the first
    look that rejects. ``draw(n)`` makes one call of at most n trials and returns (events,
    trials drawn). Returns (events, trials drawn, smallest p-value over the looks made), over
    all ranks when ``shard`` is one rank's part (``draw`` then draws with that rank's seeds)."""
    looks = [math.ceil(f * planned) for f in fraction_schedule(LOOKS)]
    local = [0, 0]                      # this rank's events and trials
    p_value = 1.0
    for look in looks:
        more = partial(_draw_until, draw, local, shard.size(look))
        wins, drawn = merged(shard, f"tail look at {look} of {planned} trials", more).tolist()
        p_value = min(p_value, equal_tailed_p(wins, drawn, mass))
        if p_value <= alpha_look:
            break
    return wins, drawn, p_value


def min_detectable_excess(n: int, mass: float, alpha: float, power: float) -> float:
    """The smallest relative excess ``e`` (true rate ``mass (1 + e)``) that the upper half of
    the equal-tailed test (level ``alpha / 2``) rejects with probability ``power``."""
    return min_detectable_rate(n, mass, alpha / 2.0, power) / mass - 1.0


def scale_record(scale: float, vocab: int, mass: float, planned: int, found, alpha_look: float,
                 power: float) -> dict:
    """One scale's row of the report, with the exact smallest detectable deficit and excess
    (relative to ``mass``, at the planned trials)."""
    wins, drawn, p_value = found
    return {"scale": scale, "vocab": vocab, "rare_mass": mass, "rows": drawn,
            "planned_rows": planned, "rare_wins": wins, "expected": mass * drawn,
            "p_value": p_value,
            "min_detectable_deficit": min_detectable_deficit(planned, mass, alpha_look, power),
            "min_detectable_excess": min_detectable_excess(planned, mass, alpha_look, power)}


FLOAT32_FLOOR_SCALE = 1e-8     # where noise wrong below about 2^-24 changes rare wins most
LONG_ROW = 2**17               # tokens of a tail row at most (its rare tokens M = 0.01 / r)
SHORT_ROW = 1024               # tokens of the short rows at 1e-8: one chunk, one tile


def tail_row(scale: float, max_vocab: int, seed: int, rare_mass: float = 0.01):
    """One head token and M rare tokens of probability ``scale`` times the head's, where
    M = rare_mass / scale (capped by ``max_vocab``). Returns (float32 row, rare mask)."""
    rare = int(min(max(1, round(rare_mass / scale)), max_vocab - 1))
    vocab = rare + 1
    head = int(np.random.default_rng(seed).integers(vocab))
    weights = np.full(vocab, scale)
    weights[head] = 1.0
    mask = np.ones(vocab, dtype=bool)
    mask[head] = False
    return normalised(weights), mask


def device_scales(ctx, scales, short_rows: bool = True) -> tuple[tuple[float, int], ...]:
    """The sweep's entries (scale, tokens a row at most: LONG_ROW, or SHORT_ROW): the budget's
    scales, and on a GPU, where they reach 1e-6, two more at 1e-8, where noise wrong below
    about 2^-24 changes the rare wins by a large factor (float32 exponential noise, its
    2^-24 floor, loses about 99 % of them; -log(1 - u) in float32 for -log1p(-u), q
    exactly 0 below u = 2^-25 and at least 2^-24 above, gave 176 where 100 were expected in
    triton-rejection's race on an H100):

    - 1e-8 at the family's vocabulary, where the budget stops above it (quick);
    - 1e-8 in short rows of SHORT_ROW tokens, a head and 1023 rare tokens. A kernel that
      races in two levels (chunks, then the tokens of the winning chunk) or tile by tile
      draws a long row's rare tokens against one another, where no tiny variate is needed;
      only the few that share the head's chunk or tile race it token by token, so wrong
      token-level noise costs a long row about 2 % of its rare wins (undetectable), and a
      short row, one chunk of 1024 tokens or less, almost all of them. (Shorter rows would
      see smaller chunks too, but cost more rows for the same rare mass: the per-row work
      of a call, not its tokens, would then set the time.)

    On a GPU the ~1e10 tokens an entry costs at 100 expected events take seconds; the
    interpreter on a CPU could not draw them (its budgets stay as declared). A family whose
    contract takes a request at a time in Python (spec-decode's proposer) cannot make the
    1.6e8 short rows in time either: ``short_rows`` False. The entries take their share of
    alpha like the others (Bonferroni)."""
    entries = tuple((scale, LONG_ROW) for scale in scales)
    if ctx.device.type == "cuda" and min(scales) <= 1e-6:
        if min(scales) > FLOAT32_FLOOR_SCALE:
            entries += ((FLOAT32_FLOOR_SCALE, LONG_ROW),)
        if short_rows:
            entries += ((FLOAT32_FLOOR_SCALE, SHORT_ROW),)
    return entries


def scale_sweep(ctx, scales, expected: float, setup, cap: int | None = None,
                rare_tokens: bool = True, short_rows: bool = True):
    """The sequential test at every entry of ``device_scales(ctx, scales, short_rows)`` (of
    ``scales`` alone where the events are not ``rare_tokens`` of a row: accepted drafts), alpha
    split over the entries (Bonferroni) and the looks. ``setup(scale, vocab)`` gives (exact
    event rate, tokens per trial, ``draw``) at ``scale``, rows of at most ``vocab`` tokens;
    the planned trials make ``expected`` events under H0, at most ``cap``. Returns
    (records, alpha per look)."""
    entries = (device_scales(ctx, scales, short_rows) if rare_tokens
               else tuple((scale, LONG_ROW) for scale in scales))
    alpha_look = looks_alpha(bonferroni(ctx.alpha, len(entries)), LOOKS)
    records = []
    for scale, most in entries:
        mass, vocab, draw = setup(scale, most)
        planned = math.ceil(expected / mass)
        planned = planned if cap is None else min(planned, cap)
        ctx.plan(ctx.shard.size(planned) * vocab)
        found = sequential_wins(draw, planned, mass, alpha_look, ctx.shard)
        records.append({**scale_record(scale, vocab, mass, planned, found, alpha_look,
                                       ctx.budget.power), "short_row": most == SHORT_ROW})
    return records, alpha_look


def scale_label(record: dict) -> str:
    """``1e-06``, or ``1e-08 (V 1024)`` for a short-row entry."""
    short = record.get("short_row")
    return f"{record['scale']:g}" + (f" (V {record['vocab']})" if short else "")


def _rare_tokens(s: dict) -> str:
    return (f"rare tokens at {scale_label(s)} x head won {s['rare_wins']} times in "
            f"{s['rows']:,} rows where {s['expected']:.1f} were expected")


def tail_outcome(ctx, scales: list[dict], alpha_look: float, law: str,
                 describe=_rare_tokens, events: str = "rare-token wins",
                 effect: str = "relative shortfall of the rare mass (worst scale)",
                 mde: float | None = None) -> Outcome:
    """The verdict over the scales (each a look-Bonferroni p-value at ``alpha_look``);
    ``describe`` words a failed scale's record; ``mde`` is the minimum detectable ``effect``
    (default: the worst scale's detectable deficit)."""
    failed = [s for s in scales if s["p_value"] <= alpha_look]
    if failed:
        s = failed[0]
        message = f"{describe(s)} (p = {s['p_value']:.2g})"
    else:
        message = (f"{events} match {law} at scales "
                   + ", ".join(scale_label(s) for s in scales))
    return Outcome(not failed, message,
                   statistic=float(min(s["rare_wins"] / s["expected"] for s in scales)),
                   p_value=adjusted_p([s["p_value"] * LOOKS for s in scales]), alpha=ctx.alpha,
                   samples=sum(s["rows"] * s["vocab"] for s in scales),
                   min_detectable_effect=max(s["min_detectable_deficit"] for s in scales)
                   if mde is None else mde,
                   effect=effect,
                   details={"scales": scales, "alpha_per_look": alpha_look,
                            "plot": tail_plot(scales, f"{events} per scale against {law}")})
