"""Independence of family ``sample``: rows of one call, and calls with different seeds.

Identical rows are sampled in two calls with adjacent seeds s and s+1 (the seeds most likely
to collide in a badly keyed generator). For each pairing of draws (X, Y):

* adjacent rows of one call;  the same row under seeds s and s+1;  row i+1 under s against
  row i under s+1, and row i under s against row i+1 under s+1 (streams keyed by
  seed + row overlap exactly there),

two tests run against the exact law of an independent pair, P(X=a, Y=b) = p_a p_b:

* agreement: P(X = Y) = sum p^2; one-sided exact binomial test for an excess;
* joint: Pearson chi-square of the K x K table of pairs (K tokens in the support, every
  cell expecting >= 5), which sees any dependence, not only agreement.

Two rows are used: K = 13 flat tokens in V = 13, and K = 8 tokens spread over V = 4099 at
the edges of 1024- and 2048-wide blocks. Alpha: the check's share over 16 tests.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.independence import SPREAD, pairings, pairings_outcome, support_index
from sampling_harness.reference.categorical import exact_probs
from sampling_harness.stats.independence import pair_tests
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.verdict import Outcome


def rows() -> dict[str, np.ndarray]:
    narrow = np.full(13, 1.0 / 13, dtype=np.float32)
    spread = np.zeros(4099, dtype=np.float32)
    spread[list(SPREAD)] = 1.0 / len(SPREAD)
    return {"flat V=13": narrow, "8 tokens over V=4099": spread}


def independence(ctx) -> Outcome:
    alpha = bonferroni(ctx.alpha, 2 * len(rows()) * 4)
    seed = ctx.seed
    results, draws = [], 0
    for name, row in rows().items():
        support = np.flatnonzero(row > 0)
        p = exact_probs(torch.as_tensor(row)[None])[0][support]
        to_support = support_index(support, row.size, ctx.device)
        probs = torch.as_tensor(row, device=ctx.device).repeat(ctx.budget.pairs, 1)
        a = to_support[ctx.runner.call({"probs": probs}, seed)]
        b = to_support[ctx.runner.call({"probs": probs}, seed + 1)]
        draws += 2 * ctx.budget.pairs
        for pairing, (x, y) in pairings(a, b).items():
            r = pair_tests(x.cpu().numpy(), y.cpu().numpy(), p, alpha, ctx.budget.power)
            results.append({"row": name, "pairing": pairing, **r})
    return pairings_outcome(ctx, results, draws, alpha)
