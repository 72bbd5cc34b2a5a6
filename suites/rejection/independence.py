"""Independence of family ``rejection``: requests of one call, and calls with seeds s, s+1.

One request law with a small outcome space: V = 3, two fixed drafts, each accepted with
probability 1/2; its outcome Z = (A, Y) takes 4 values of probability >= 1/6. The request
is repeated in every row of two calls with adjacent seeds s and s+1 (identical inputs). For
each pairing (adjacent requests of one call; the same request under s and s+1; request
i+1 under s against i under s+1, and the reverse: streams keyed by seed + request overlap
there), two tests against the law of an independent pair (harness/stats/independence.py):
an exact one-sided test of excess agreement, and a chi-square of the 4 x 4 joint table.
Alpha: the check's share over 8 tests.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.independence import pairings, pairings_outcome, support_index
from sampling_harness.reference.rejection import RejectionLaws, joint_law
from sampling_harness.stats.independence import pair_tests
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.suites.rejection.draws import accepted_and_emitted, batch_inputs

VOCAB = 3
LAW = RejectionLaws(
    target=np.array([[0.3, 0.3, 0.4], [0.5, 0.25, 0.25]], dtype=np.float32),
    draft=np.array([[0.6, 0.2, 0.2], [0.25, 0.5, 0.25]], dtype=np.float32),
    num_draft_tokens=(2,), bonus=np.array([2], dtype=np.int64),
    greedy=np.array([False]), fixed_drafts=np.array([0, 1], dtype=np.int64))


def independence(ctx):
    pairs, seed = ctx.budget.pairs, ctx.seed
    law = joint_law(*[LAW.request(0)[k] for k in (0, 1)], LAW.bonus[0], LAW.fixed_drafts)
    support = np.flatnonzero(law.ravel() > 0)
    to_support = support_index(support, law.size, ctx.device)
    drafts = torch.as_tensor(LAW.fixed_drafts).repeat(pairs)
    inputs = batch_inputs(LAW, drafts, pairs, ctx.device)
    outcomes = []
    for s in (seed, seed + 1):
        accepted, emitted = accepted_and_emitted(ctx.runner.call(inputs, s))
        outcomes.append(to_support[accepted * VOCAB + emitted])
    alpha = bonferroni(ctx.alpha, 2 * 4)
    results = []
    for name, (x, y) in pairings(*outcomes, unit="request").items():
        r = pair_tests(x.cpu().numpy(), y.cpu().numpy(), law.ravel()[support], alpha,
                       ctx.budget.power)
        results.append({"pairing": name, **r})
    return pairings_outcome(ctx, results, 2 * pairs, alpha,
                            effect="agreement rate P(Z = Z') of two requests' outcomes (A, Y) "
                                   "(independent: sum P(z)^2 = 0.264)")
