"""Acceptance tail of family ``rejection``: are drafts of tiny p(d) / q(d) accepted exactly as
often as min(1, p/q) says?

At each ratio r, every request has one draft d over V = 2 tokens: q = (1/2, 1/2), p(d) =
fl32(r / 2), p(other) = 1 - p(d); d alternates between the two columns. A correct sampler
accepts d with probability a = p(d) / q(d), computed in float64 from the float32 values it
is given (u q < p with a 53-bit u: exact up to 2^-53). A rejected d emits the other token
(the residual's only support; the runner checks that exactly). The accepted count in n
requests is Binomial(n, a), tested by the exact, equal-tailed, group-sequential test of
suites/rare_wins.py (looks at 1/8, 1/4, 1/2 and all of the planned requests, each at
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
Both floor classes of float32 need 10^8 to 10^9 requests; a 31- or 32-bit uniform (floor or
zero mass near 2^-31) needs about 10^10, beyond any budget here: the minimum detectable
effects say so.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from sampling_harness.suites.rare_wins import scale_sweep, tail_outcome
from sampling_harness.verdict import Outcome

VOCAB = 2


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


def acceptance_tail(ctx) -> Outcome:
    budget = ctx.budget
    seeds = ctx.rank_seeds()
    per_call = max(1, ctx.max_call_elements // 8)

    def setup(ratio):
        accept = ratio_rows(ratio)[2]
        planned = min(math.ceil(budget.accept_expected / accept), budget.accept_trials)
        inputs = ratio_batch(ratio, min(per_call, planned), ctx.device)

        def draw(count):
            n = min(count, inputs["target_probs"].shape[0])
            batch = {name: value[:n] for name, value in inputs.items()}
            out = ctx.runner.call(batch, next(seeds))
            return int((out[:, 0] == batch["draft_token_ids"]).sum()), n
        return accept, VOCAB, draw

    ratios, alpha_look = scale_sweep(ctx, budget.accept_ratios, budget.accept_expected, setup,
                                     cap=budget.accept_trials)
    smallest = ratios[-1]
    return tail_outcome(ctx, ratios, alpha_look, "min(1, p/q)",
                        describe=lambda s: (
                            f"drafts of p/q = {s['rare_mass']:.3g} were accepted "
                            f"{s['rare_wins']} times in {s['rows']:,} requests where "
                            f"{s['expected']:.2f} were expected"),
                        events="accepted drafts",
                        effect=f"relative excess of the acceptance rate at p/q = "
                               f"{smallest['rare_mass']:.3g} (an added rate of "
                               f"{smallest['min_detectable_excess'] * smallest['rare_mass']:.2g})",
                        mde=smallest["min_detectable_excess"])
