"""Generated hand-overs of family ``draft-probs``: Hypothesis draws caches and batches
(reorderings, zero-draft requests anywhere, missing and new requests, R != B, K from 1 to
8, empty batches, no cache; harness/strategies/draft_probs.py), seeded by the check's seed.
Exact: every output equals the reference's, under two allocator poisons."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from sampling_harness.strategies.draft_probs import handover_batches
from sampling_harness.strategies.seeded import examples
from sampling_harness.suites.draft_probs.handover import describe, mismatch
from sampling_harness.verdict import Outcome


def generated(ctx) -> Outcome:
    budget, seeds, found = ctx.budget, ctx.seeds(), []

    @hypothesis_seed(ctx.seed)
    @settings(max_examples=budget.generated_batches, phases=[Phase.generate], database=None,
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(batch=handover_batches(budget.max_vocab))
    def one_batch(batch):
        if not found:
            wrong = mismatch(ctx, batch, next(seeds))
            if wrong:
                found.append(f"{wrong} ({describe(batch)})")

    examples(one_batch)
    effect = "hand-overs differing from the reference (any fails)"
    if found:
        return Outcome(False, found[0], samples=ctx.runner.calls // 2,
                       min_detectable_effect=1.0, effect=effect)
    return Outcome(True, f"{ctx.runner.calls // 2} generated hand-overs equal the reference "
                         "exactly", samples=ctx.runner.calls // 2, min_detectable_effect=1.0,
                   effect=effect)
