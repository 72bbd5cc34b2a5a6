"""Tail of family ``sample-logits``: do rare tokens win as often as the processed law says?

The tail check of family ``sample`` (suites/sample/test_tail.py), on logits. At each scale r
a row holds one head token, M rare tokens whose processed probability is r times the
head's (logit log r), and 16 masked tokens (-inf) among them. Temperature 0.5 with the
logits halved: the division is exact. (Top-k and top-p are left off: the boundaries check
exercises them, and the sort of a sort-based kernel would make the CPU self-test of the
float32 noise floor, 2.5e9 draws, take minutes.) The count of
rare wins in n rows is Binomial(n, R), R the rare mass of the float64 processed law; the
test is exact, equal-tailed and group-sequential (looks at 1/8, 1/4, 1/2 and all of the
planned rows, each at alpha / 4). The planned n makes the expected rare wins
``budget.tail_expected``: noise with a floor q_min (float32 exponentials: 2^-24) loses the
rare wins once r << q_min.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from harness.stats.binomial import (
    equal_tailed_p,
    fraction_schedule,
    looks_alpha,
    min_detectable_deficit,
)
from harness.stats.multiple import adjusted_p, bonferroni
from harness.verdict import Outcome
from suites.sample.draws import rows_per_call
from suites.sample_logits.rows import Rows

pytestmark = pytest.mark.family("sample-logits")

LOOKS = 4
TAIL_MAX_VOCAB = 2**17
JUNK = 16
TEMPERATURE = 0.5


def tail_rows(scale: float, seed: int, rare_mass: float = 0.01) -> tuple[Rows, np.ndarray]:
    """(the row, its rare mask): M = rare_mass / scale rare tokens (capped)."""
    rare = int(min(max(1, round(rare_mass / scale)), TAIL_MAX_VOCAB - 1 - JUNK))
    vocab = rare + 1 + JUNK
    rng = np.random.default_rng(seed)
    slots = rng.permutation(vocab)
    z = np.full(vocab, math.log(scale))
    z[slots[0]] = 0.0
    z[slots[1:1 + JUNK]] = -np.inf
    mask = np.zeros(vocab, bool)
    mask[slots[1 + JUNK:]] = True
    return Rows.of({f"scale {scale:g}": (z * TEMPERATURE, TEMPERATURE, 0, 1.0)}), mask


def tail(ctx) -> Outcome:
    budget = ctx.budget
    alpha_look = looks_alpha(bonferroni(ctx.alpha, len(budget.tail_scales)), LOOKS)
    seeds = ctx.seeds()
    scales, p_values, worst_mde, draws = [], [], 0.0, 0
    for scale in budget.tail_scales:
        rows, rare = tail_rows(scale, ctx.seed)
        mass = float(np.sort(rows.law.probs[0][rare]).sum())
        planned = math.ceil(budget.tail_expected / mass)
        inputs = rows.inputs(ctx.device, rows_per_call(ctx, rows.vocab))
        rare_t = torch.as_tensor(rare, device=ctx.device)
        looks = [math.ceil(f * planned) for f in fraction_schedule(LOOKS)]
        wins = drawn = 0
        p_value = 1.0
        for look in looks:
            while drawn < look:
                size = min(inputs["logits"].shape[0], look - drawn)
                batch = {name: value[:size] for name, value in inputs.items()}
                wins += int(rare_t[ctx.runner.call(batch, next(seeds))].sum())
                drawn += size
            p_value = min(p_value, equal_tailed_p(wins, drawn, mass))
            if p_value <= alpha_look:
                break
        mde = min_detectable_deficit(planned, mass, alpha_look, budget.power)
        worst_mde = max(worst_mde, mde)
        draws += drawn * rows.vocab
        p_values.append(p_value * LOOKS)
        scales.append({"scale": scale, "vocab": rows.vocab, "rare_mass": mass, "rows": drawn,
                       "planned_rows": planned, "rare_wins": wins, "expected": mass * drawn,
                       "p_value": p_value, "min_detectable_deficit": mde})
    failed = [s for s in scales if s["p_value"] <= alpha_look]
    if failed:
        s = failed[0]
        message = (f"rare tokens at {s['scale']:g} x head won {s['rare_wins']} times in "
                   f"{s['rows']:,} rows where {s['expected']:.1f} were expected "
                   f"(p = {s['p_value']:.2g})")
    else:
        message = ("rare-token wins match the processed law's rare mass at scales "
                   + ", ".join(f"{s['scale']:g}" for s in scales))
    return Outcome(not failed, message,
                   statistic=float(min(s["rare_wins"] / s["expected"] for s in scales)),
                   p_value=adjusted_p(p_values), alpha=ctx.alpha, samples=draws,
                   min_detectable_effect=worst_mde,
                   effect="relative shortfall of the rare mass (worst scale)",
                   details={"scales": scales, "alpha_per_look": alpha_look})


@pytest.mark.statistical
def test_tail(check):
    check.run(tail)
