"""Curated hand-overs of family ``draft-probs``: one batch per rule of the contract (same
order, reordered, zero drafts first, middle and last, fewer drafts than cached, a new
request with and without drafts, no drafts at all, an empty batch, no cache). Exact: every
output equals the reference's, under two allocator poisons; no alpha is spent."""

from __future__ import annotations

from sampling_harness.suites.draft_probs.handover import curated_batches, describe, mismatch
from sampling_harness.verdict import Outcome


def curated(ctx) -> Outcome:
    seeds, batches = ctx.seeds(), curated_batches(ctx.seed)
    for name, batch in batches.items():
        wrong = mismatch(ctx, batch, next(seeds))
        if wrong:
            return Outcome(False, f"{name}: {wrong} ({describe(batch)})",
                           samples=len(batches), min_detectable_effect=1.0,
                           effect="hand-overs differing from the reference (any fails)")
    return Outcome(True, f"{len(batches)} curated hand-overs equal the reference exactly",
                   samples=len(batches), min_detectable_effect=1.0,
                   effect="hand-overs differing from the reference (any fails)",
                   details={"batches": list(batches)})
