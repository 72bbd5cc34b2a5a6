"""Generated hand-overs of family ``draft-probs``: Hypothesis draws caches and batches
(reorderings, zero-draft requests anywhere, missing and new requests, R != B, K from 1 to
8, empty batches, no cache; strategies.py), seeded by the check's seed.
Exact: every output equals the reference's, under two allocator poisons."""

from __future__ import annotations

from sampling_harness.strategies.seeded import each_example
from sampling_harness.suites.draft_probs.handover import describe, mismatch
from sampling_harness.suites.draft_probs.strategies import handover_batches
from sampling_harness.verdict import Outcome


def generated(ctx) -> Outcome:
    budget, seeds, found = ctx.budget, ctx.seeds(), []

    def one_batch(batch):
        if not found:
            wrong = mismatch(ctx, batch, next(seeds))
            if wrong:
                found.append(f"{wrong} ({describe(batch)})")

    each_example(ctx.seed, budget.generated_batches, handover_batches(budget.max_vocab), one_batch)
    effect = "hand-overs differing from the reference (any fails)"
    if found:
        return Outcome(False, found[0], samples=ctx.runner.calls // 2,
                       min_detectable_effect=1.0, effect=effect)
    return Outcome(True, f"{ctx.runner.calls // 2} generated hand-overs equal the reference "
                         "exactly", samples=ctx.runner.calls // 2, min_detectable_effect=1.0,
                   effect=effect)
