"""Independence of family ``sample-logits``: rows of one call, and calls with different seeds.

The pairings and tests shared with family ``sample`` (harness/checks/independence.py):
identical rows sampled in two calls with seeds s and s+1; for adjacent rows of one call,
the same row under both seeds, and rows i, i+1 across the seeds, an exact agreement test
and a joint K x K chi-square against the law of an independent pair. Two rows: 13 equal
logits (uniform over V = 13), and 8 tokens spread over V = 4099 at block edges under top-k 8
with every other logit 4 below them (so the filter, not a -inf, masks the rest).
Alpha: the check's share over 16 tests.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.checks.independence import SPREAD, pairings, pairings_outcome, support_index
from sampling_harness.errors import KernelFailure
from sampling_harness.stats.independence import pair_tests
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.suites.sample_logits.rows import Rows
from sampling_harness.verdict import Outcome


def rows() -> dict[str, Rows]:
    spread = np.full(4099, -4.0)
    spread[list(SPREAD)] = 0.0
    return {"flat V=13": Rows.of({"flat": (np.zeros(13), 1.0, 0, 1.0)}),
            "8 tokens over V=4099, top-k 8": Rows.of({"spread": (spread, 1.0, 8, 1.0)})}


def independence(ctx) -> Outcome:
    alpha = bonferroni(ctx.alpha, 2 * len(rows()) * 4)
    seed = ctx.seed
    results, draws = [], 0
    for name, row in rows().items():
        law = row.law.probs[0]
        support = np.flatnonzero(law > 0)
        to_support = support_index(support, row.vocab, ctx.device)
        inputs = row.inputs(ctx.device, ctx.budget.pairs)
        a = to_support[ctx.runner.call(inputs, seed)]
        b = to_support[ctx.runner.call(inputs, seed + 1)]
        if bool((a < 0).any() | (b < 0).any()):
            raise KernelFailure(f"drew a token outside the kept set of row {name!r}")
        draws += 2 * ctx.budget.pairs
        for pairing, (x, y) in pairings(a, b).items():
            r = pair_tests(x.cpu().numpy(), y.cpu().numpy(), law[support], alpha,
                           ctx.budget.power)
            results.append({"row": name, "pairing": pairing, **r})
    return pairings_outcome(ctx, results, draws, alpha)
