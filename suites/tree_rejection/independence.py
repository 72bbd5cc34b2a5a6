"""Independence of family ``tree-rejection``: requests of one call, and calls with seeds s, s+1.

One small law: V = 3, a star of two children at the root, p = (0.3, 0.3, 0.4) there and
(0.5, 0.5, 0) after either child; the returned sequence Z takes 5 values, (0, 0), (0, 1),
(1, 0), (1, 1) with probability 0.15 and (2) with 0.4 (reference/tree_rejection.py
``sequence_law``). Two trees of it: listed children (0, 1), the same inputs in every row
and in both calls (the contract's law holds for a fixed tree), and children drawn from
q = (1/2, 1/2, 0), drawn afresh for every row of every call (the law holds averaged over
the draws only, so rows never share a drawn tree). Each is called with adjacent seeds s and
s+1. For each tree and pairing (adjacent requests of one call; the same request under s and
s+1; request i+1 under s against i under s+1, and the reverse: streams keyed by seed +
request overlap there), two tests against the law of an independent pair
(harness/stats/independence.py): an exact one-sided test of excess agreement, and a
chi-square of the 5 x 5 joint table. Alpha: the check's share over 16 tests.

A returned sequence the law never makes fails the check exactly, before any statistic, as
in ``law``: the pair tests count only the law's support. Validation lets some through: with
drawn children a sequence never ends at the root on 0 or 1 (rejected drafts leave the
residual on token 2 alone), yet where the tree drew (0, 0) a lone 1 is a valid row.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.independence import pairings, pairings_outcome, support_index
from sampling_harness.reference.tree_rejection import TreeModel, flat_law, sequence_law
from sampling_harness.stats.independence import pair_tests
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.suites.tree_rejection.batches import CaseSampler, TreeCase, cells
from sampling_harness.suites.tree_rejection.law import sequence_of
from sampling_harness.verdict import Outcome

VOCAB = 3
PARENTS = (-1, -1)


def model() -> TreeModel:
    """Rows for the root and after each token (paths of length <= 1)."""
    root, leaf = [0.3, 0.3, 0.4], [0.5, 0.5, 0.0]
    target = np.array([root, leaf, leaf, leaf], np.float32)
    draft = np.array([[0.5, 0.5, 0.0]] * 4, np.float32)
    return TreeModel(target=target, draft=draft, depth=1)


def trees() -> dict[str, TreeCase]:
    law = model()
    return {"listed": TreeCase("listed children (0, 1)", PARENTS, law, np.array([0, 1])),
            "drawn": TreeCase("children drawn from q", PARENTS, law, None)}


def independence(ctx):
    pairs, seed = ctx.budget.pairs, ctx.seed
    alpha = bonferroni(ctx.alpha, 2 * 4 * 2)
    generator = torch.Generator(device=ctx.device)
    results, seeds = [], ctx.seeds()
    for mode, case in trees().items():
        law = flat_law(sequence_law(case.model, case.parents, case.tokens))
        support = np.flatnonzero(law > 0)
        to_support = support_index(support, law.size, ctx.device)
        sampler, outcomes = CaseSampler(case, ctx.device), []
        for s in (seed, seed + 1):
            generator.manual_seed(next(seeds))
            seen = cells(ctx.runner.call(sampler.inputs(pairs, generator), s), VOCAB)
            if bool((to_support[seen] < 0).any()):
                return impossible(ctx, mode, s, seen.cpu().numpy(), law)
            outcomes.append(to_support[seen])
        results += [{"pairing": name, "row": mode,
                     **pair_tests(x.cpu().numpy(), y.cpu().numpy(), law[support], alpha,
                                  ctx.budget.power)}
                    for name, (x, y) in pairings(*outcomes, unit="request").items()]
    collision = float(np.sum(law[support] ** 2))        # the same law in both trees
    return pairings_outcome(ctx, results, 4 * pairs, alpha,
                            effect=f"agreement rate P(Z = Z') of two requests' returned "
                                   f"sequences (independent: sum P(z)^2 = {collision:.3f})")


def impossible(ctx, mode: str, seed: int, seen: np.ndarray, law: np.ndarray) -> Outcome:
    """The failing verdict of a call whose returned sequences (``seen``, cells of ``law``)
    include one of probability 0: an exact failure, no statistic."""
    never = law[seen] == 0
    request = int(np.flatnonzero(never)[0])
    sequence = sequence_of(int(seen[request]), VOCAB)
    return Outcome(False, f"{mode} children, seed {seed}: request {request} returned the "
                          f"sequence {sequence}, of probability 0 under the law "
                          f"({int(never.sum())} of {seen.size} requests; an exact failure)",
                   p_value=0.0, alpha=ctx.alpha, samples=int(seen.size),
                   effect="returned sequences of probability 0 under the law",
                   details={"row": mode, "seed": seed, "request": request,
                            "sequence": sequence, "impossible": int(never.sum())})
