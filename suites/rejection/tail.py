"""Tail of family ``rejection``: do rare tokens of the residual get recovered as often as they
should?

At each rarity scale r, every request has one draft d with p(d) = 0, so the draft is rejected
for certain (u q(d) < 0 never holds) and the emitted token is drawn from the residual
w = max(p - q, 0). The target row p is ``sample``'s tail row (one head, M rare tokens of
probability r times the head's, suites/sample/distributions.py) with d inserted at a random
column; the draft row q puts 1/2 on d and 1/2 on the head, so the kernel must subtract:
w(head) = p(head) - 1/2 (exact in float32 by Sterbenz), w(rare) = p(rare), w(d) = 0. The
residual law is sampling_harness.reference.rejection.residual of those float32 values, in float64.

The count of rare recovered tokens in n requests is Binomial(n, R), R the residual's exact
rare mass, tested by the exact, equal-tailed, group-sequential test of harness/checks/rare_wins.py
(looks at 1/8, 1/4, 1/2 and all of the planned requests, each at alpha / 4, Bonferroni over
the scales). The planned n makes the expected rare tokens ``budget.tail_expected``. A race on
float32 exponential noise (floor 2^-24 on CUDA, the recovered-token race vLLM moved to
float64 in PR 43150) loses the rare tokens once r << 6e-8: at r = 1e-8 it recovers almost
none. Detecting a scale r costs about tail_expected / (2 M r) requests of M + 2 tokens.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.rare_wins import (
    LONG_ROW,
    scale_label,
    scale_sweep,
    tail_outcome,
    tail_row,
)
from sampling_harness.reference.rejection import residual
from sampling_harness.suites.rejection.requests import leading
from sampling_harness.verdict import Outcome


def residual_tail(scale: float, seed: int, vocab: int = LONG_ROW
                  ) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """(p, q, d, rare mask) over V = M + 2 tokens, float32 p and q: the draft d has p(d) = 0
    and q(d) = 1/2, the head q(head) = 1/2, the rare tokens q = 0."""
    row, rare = tail_row(scale, vocab - 1, seed)
    d = int(np.random.default_rng(seed + 1).integers(row.size + 1))
    p = np.insert(row, d, 0.0).astype(np.float32)
    rare = np.insert(rare, d, False)
    q = np.zeros_like(p)
    q[d] = 0.5
    q[int(np.flatnonzero(~rare & (p > 0))[0])] = 0.5
    return p, q, d, rare


def tail(ctx) -> Outcome:
    seeds = ctx.rank_seeds()

    def setup(scale, vocab):
        p, q, d, rare = residual_tail(scale, ctx.seed, vocab)
        rows = max(1, ctx.max_call_elements // p.size)
        inputs = {"draft_token_ids": torch.full((rows,), d, dtype=torch.int64, device=ctx.device),
                  "num_draft_tokens": [1] * rows,
                  "draft_probs": torch.as_tensor(q, device=ctx.device).repeat(rows, 1),
                  "target_probs": torch.as_tensor(p, device=ctx.device).repeat(rows, 1),
                  "bonus_token_ids": torch.full((rows,), d, dtype=torch.int64, device=ctx.device),
                  "greedy": torch.zeros(rows, dtype=torch.bool, device=ctx.device)}
        rare_t = torch.as_tensor(rare, device=ctx.device)

        def draw(count):
            n = min(count, rows)
            out = ctx.runner.call(leading(inputs, n), next(seeds))
            return int(rare_t[out[:, 0]].sum()), n
        return float(np.sum(np.sort(residual(p, q)[rare]))), int(p.size), draw

    scales, alpha_look = scale_sweep(ctx, ctx.budget.tail_scales, ctx.budget.tail_expected,
                                     setup)
    return tail_outcome(ctx, scales, alpha_look, "the residual's exact rare mass",
                        describe=lambda s: (
                            f"rare residual tokens at {scale_label(s)} x head were recovered "
                            f"{s['rare_wins']} times in {s['rows']:,} rejections where "
                            f"{s['expected']:.1f} were expected"),
                        events="rare recovered tokens")
