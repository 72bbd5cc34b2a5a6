"""Emitted-token marginal of family ``rejection``: the token in each slot, in a large vocabulary.

Speculative decoding is lossless when, with drafts drawn from q, the token in slot i (an
accepted draft or the recovered token) follows the target p_i given that slot i is reached:
min(p, q) + max(p - q, 0) = p. Per slot of each request, two Pearson chi-square tests of
the slot's token counts against p_i (reference/rejection.py ``slot_marginals``), as in the
``sample`` family's fit: coarse (at most 32 equal-mass bins, planned so that total
variation ``budget.marginal_tv`` is detected with power ``budget.power``, the worst case
over deviation shapes) and fine (every token its own bin unless it expects fewer than 5).
V = 151936 on a GPU. Alpha: the check's share over 2 tests per slot.
"""

from __future__ import annotations

import math

from sampling_harness.checks.fits import law_test, laws_outcome
from sampling_harness.reference.rejection import slot_marginals
from sampling_harness.stats.chisquare import planned_samples
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.suites.rejection.draws import tally
from sampling_harness.suites.rejection.requests import build

MAX_BINS = 32
REQUESTS = (  # every tested slot is reached in at least half of the draws
    ("typical x2", ("typical",) * 2, False),
    ("q mass where p has none x2", ("q-mass-where-p-has-none",) * 2, False),
    ("mixed positions", ("near-equal", "peaked-target"), False),
)


def marginal(ctx):
    budget = ctx.budget
    vocab = budget.marginal_vocab_gpu if ctx.device.type == "cuda" else budget.marginal_vocab_cpu
    names, laws = build(REQUESTS, vocab, ctx.seed)
    slots = []  # (request, slot, reach, law)
    for b in range(laws.batch):
        target, draft, _, bonus, greedy = laws.request(b)
        if greedy:
            continue
        reach, law = slot_marginals(target, draft, bonus)
        slots += [(b, i, float(reach[i]), law[i]) for i in range(target.shape[0])]
    alpha = bonferroni(ctx.alpha, 2 * len(slots))
    per_slot = planned_samples([law for *_, law in slots], budget.marginal_tv, alpha,
                               budget.power, max_bins=MAX_BINS)
    replicas = max(math.ceil(per_slot / reach) for _, _, reach, _ in slots)
    tables = tally(ctx, laws, replicas, slots=True)
    results = []
    for b, i, _, law in slots:
        for test, max_bins in (("coarse", MAX_BINS), ("fine", None)):
            results.append({**law_test(f"{names[b]}, slot {i}, {test}", tables[b][i], law,
                                       alpha, budget.power, max_bins=max_bins),
                            "test": test})
    coarse = [r for r in results if r["test"] == "coarse"]
    return laws_outcome(ctx, results, alpha,
                        f"total variation of a slot's token law on <= {MAX_BINS} equal-mass bins "
                        f"(target {budget.marginal_tv:g}, V = {vocab})",
                        sum(r["draws"] for r in coarse),
                        mde=max(r["min_detectable_tv"] for r in coarse),
                        describe=lambda r: f"token {r['worst_cell']}")
