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

from sampling_harness.reference.rejection import RejectionLaws, joint_law
from sampling_harness.stats.independence import pair_tests, pairings_verdict
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.suites.rejection.draws import accepted_and_emitted, batch_inputs
from sampling_harness.verdict import Outcome

VOCAB = 3
LAW = RejectionLaws(
    target=np.array([[0.3, 0.3, 0.4], [0.5, 0.25, 0.25]], dtype=np.float32),
    draft=np.array([[0.6, 0.2, 0.2], [0.25, 0.5, 0.25]], dtype=np.float32),
    num_draft_tokens=(2,), bonus=np.array([2], dtype=np.int64),
    greedy=np.array([False]), fixed_drafts=np.array([0, 1], dtype=np.int64))


def pairings(a: torch.Tensor, b: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    return {"adjacent requests": (a[0::2], a[1::2]),
            "same request, seeds s, s+1": (a, b),
            "request i+1 at s, i at s+1": (a[1:], b[:-1]),
            "request i at s, i+1 at s+1": (a[:-1], b[1:])}


def independence(ctx):
    pairs, seed = ctx.budget.pairs, ctx.seed
    law = joint_law(*[LAW.request(0)[k] for k in (0, 1)], LAW.bonus[0], LAW.fixed_drafts)
    support = np.flatnonzero(law.ravel() > 0)
    to_support = torch.full((law.size,), -1, dtype=torch.int64, device=ctx.device)
    to_support[torch.as_tensor(support, device=ctx.device)] = torch.arange(
        support.size, device=ctx.device)
    drafts = torch.as_tensor(LAW.fixed_drafts).repeat(pairs)
    inputs = batch_inputs(LAW, drafts, pairs, ctx.device)
    outcomes = []
    for s in (seed, seed + 1):
        accepted, emitted = accepted_and_emitted(ctx.runner.call(inputs, s))
        outcomes.append(to_support[accepted * VOCAB + emitted])
    alpha = bonferroni(ctx.alpha, 2 * 4)
    results = []
    for name, (x, y) in pairings(*outcomes).items():
        r = pair_tests(x.cpu().numpy(), y.cpu().numpy(), law.ravel()[support], alpha,
                       ctx.budget.power)
        results.append({"pairing": name, **r})
    passed, message, p_value = pairings_verdict(results, alpha)
    return Outcome(passed, message, statistic=max(r["joint_chi2"] for r in results),
                   p_value=p_value, alpha=ctx.alpha, samples=2 * pairs,
                   min_detectable_effect=max(r["min_detectable_agreement"] for r in results),
                   effect="agreement rate P(Z = Z') of two requests' outcomes (A, Y) "
                          "(independent: sum P(z)^2 = 0.264)",
                   details={"pairings": results, "alpha_per_test": alpha})
