"""Acceptance tail of family ``rejection``: are drafts of tiny p(d) / q(d) accepted exactly as
often as min(1, p/q) says?

At each ratio r, every request has one draft d over V = 2 tokens: q = (1/2, 1/2), p(d) =
fl32(r / 2), p(other) = 1 - p(d); d alternates between the two columns. A correct sampler
accepts d with probability a = p(d) / q(d), computed in float64 from the float32 values it
is given (u q < p with a 53-bit u: exact up to 2^-53). A rejected d emits the other token
(the residual's only support; the runner checks that exactly). The accepted count in n
requests is Binomial(n, a), tested by the exact, equal-tailed, group-sequential test of
harness/checks/rare_wins.py (looks at 1/8, 1/4, 1/2 and all of the planned requests, each at
alpha / 4, Bonferroni over the ratios).

Two failure modes of a low-resolution acceptance uniform u, both seen in the lower tail:

* u can be exactly 0 (float32 ``torch.rand``: P(u = 0) = 2^-24 on a CPU, about 2^-25 on
  CUDA): every draft is accepted with probability at least P(u = 0), so once a << P(u = 0)
  the sampler over-accepts. The excess is additive: seeing it takes about 12 / P(u = 0)
  requests at the smallest ratio.
* u never goes below a floor f (a (0, 1] uniform, a midpoint grid): no draft of a < f is
  ever accepted. Seeing it takes about ln(1 / alpha) / a requests at some a < f.

Planned requests per ratio: ``accept_expected`` / r, at most ``accept_trials``. The report
states, per ratio, the smallest relative deficit and excess detected with the budget's power.

The float32 floor (standard and thorough only): a float32 acceptance uniform in [0, 1) is
exactly 0 with probability 2^-24 (``torch.rand`` on a CPU; about 2^-25 on CUDA), so it
accepts every draft with probability at least that, and a 24-bit grid with a floor of
2^-24 accepts a draft of p/q < 2^-24 as often as it hits 0. At r = 1e-12 the exact
acceptance probability is a = fl32(r / 2) / (1 / 2) ~ 1e-12, so n requests accept
Binomial(n, a) ~ 5e-4 drafts at n = 2^29 where such a uniform accepts n 2^-24 = 32 (2^-25:
16). One-draft requests over V = 2 at r = 1e-12 are streamed in calls sized by
``ctx.max_call_elements`` (2^25 requests a call on a GPU); their number n is the least
power of two (from 2^20) at which the upper tail of the test detects an added acceptance
rate of the budget's ``float32_floor_rate`` with its power: 2^-26 at standard (half CUDA's
zero mass) gives n = 2^29 or 2^30 as the run's alpha goes, 2^-27 at thorough (2^31). The floor is
one more scale of the sequential test (alpha split over the ratios and it alike), so a
float32 uniform is caught at an early look (2^26 requests: a few seconds on a GPU). A 31- or
32-bit uniform (zero mass near 2^-31) needs about 10^10 requests, beyond any budget here:
the minimum detectable effects say so.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from sampling_harness.checks.rare_wins import (
    scale_record,
    scale_sweep,
    sequential_wins,
    tail_outcome,
)
from sampling_harness.stats.binomial import min_detectable_rate
from sampling_harness.suites.rejection.requests import leading
from sampling_harness.verdict import Outcome

VOCAB = 2
FLOOR_RATIO = 1e-12                                       # p/q of the float32 floor's drafts


def ratio_rows(ratio: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(p, q, a) for a draft at column 0: float32 rows over two tokens and the exact
    acceptance probability a = p(d) / q(d) of those float32 values."""
    p_d = np.float32(ratio / 2.0)
    p = np.array([p_d, np.float32(1.0) - p_d], dtype=np.float32)
    q = np.array([0.5, 0.5], dtype=np.float32)
    return p, q, min(1.0, float(p[0]) / float(q[0]))


def ratio_batch(ratio: float, rows: int, device) -> dict:
    """The contract's inputs of ``rows`` one-draft requests at ``ratio``, the draft at
    column 0 in even rows and at column 1 in odd rows."""
    p, q, _ = ratio_rows(ratio)
    flip = torch.arange(rows, device=device) % 2
    target = torch.as_tensor(p, device=device).repeat(rows, 1)
    target = torch.where(flip[:, None] == 1, target.flip(1), target)
    return {"draft_token_ids": flip.to(torch.int64),
            "num_draft_tokens": [1] * rows,
            "draft_probs": torch.as_tensor(q, device=device).repeat(rows, 1),
            "target_probs": target.contiguous(),
            "bonus_token_ids": 1 - flip.to(torch.int64),
            "greedy": torch.zeros(rows, dtype=torch.bool, device=device)}


class _Share:
    """The check's context with ``alpha`` in place of its own: the ratio sweep's share when
    the float32 floor takes one more scale's."""

    def __init__(self, ctx, alpha: float):
        self._ctx, self.alpha = ctx, alpha

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def floor_requests(rate: float, mass: float, alpha_look: float, power: float) -> int:
    """The least power of two n >= 2^20 at which the upper tail of the equal-tailed test
    (level alpha_look / 2) detects an acceptance rate of mass + rate with ``power``."""
    n = 2**20
    while min_detectable_rate(n, mass, alpha_look / 2.0, power) > mass + rate:
        n *= 2
    return n


def acceptance_tail(ctx) -> Outcome:
    budget = ctx.budget
    seeds = ctx.rank_seeds()
    per_call = max(1, ctx.max_call_elements // 8)
    floor = budget.float32_floor_rate
    ratios = budget.accept_ratios
    sweep = ctx if floor is None else _Share(ctx, ctx.alpha * len(ratios) / (len(ratios) + 1))

    def setup(ratio, _vocab):
        accept = ratio_rows(ratio)[2]
        planned = min(math.ceil(budget.accept_expected / accept), budget.accept_trials)
        inputs = ratio_batch(ratio, min(per_call, planned), ctx.device)

        def draw(count):
            n = min(count, inputs["target_probs"].shape[0])
            batch = leading(inputs, n)
            out = ctx.runner.call(batch, next(seeds))
            return int((out[:, 0] == batch["draft_token_ids"]).sum()), n
        return accept, VOCAB, draw

    records, alpha_look = scale_sweep(sweep, ratios, budget.accept_expected, setup,
                                      cap=budget.accept_trials, rare_tokens=False)
    if floor is not None:
        accept = ratio_rows(FLOOR_RATIO)[2]
        planned = floor_requests(floor, accept, alpha_look, budget.power)
        inputs = ratio_batch(FLOOR_RATIO, min(per_call, planned), ctx.device)

        def draw_floor(count):
            n = min(count, inputs["target_probs"].shape[0])
            out = ctx.runner.call(leading(inputs, n), next(seeds))
            return int((out[:, 0] == inputs["draft_token_ids"][:n]).sum()), n
        ctx.plan(ctx.shard.size(planned) * VOCAB)
        found = sequential_wins(draw_floor, planned, accept, alpha_look, ctx.shard)
        records.append({**scale_record(FLOOR_RATIO, VOCAB, accept, planned, found, alpha_look,
                                       budget.power), "floor": True})
    smallest = records[-1]
    return tail_outcome(ctx, records, alpha_look, "min(1, p/q)",
                        describe=lambda s: (
                            f"drafts of p/q = {s['rare_mass']:.3g} were accepted "
                            f"{s['rare_wins']} times in {s['rows']:,} requests where "
                            f"{s['expected']:.2g} were expected"),
                        events="accepted drafts",
                        effect=f"relative excess of the acceptance rate at p/q = "
                               f"{smallest['rare_mass']:.3g} (an added rate of "
                               f"{smallest['min_detectable_excess'] * smallest['rare_mass']:.2g})",
                        mde=smallest["min_detectable_excess"])
