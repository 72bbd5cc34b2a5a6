"""Family ``logprobs`` on batches drawn by Hypothesis (harness/strategies/logits.py): exact
ties, -inf entries, huge ranges, bf16 and fp16, temperatures including 0, top-k at and
around V, top-p at and around 1, K from 1 to 32 with padding anywhere. Every mode's values
and ranks against float64, as the curated check does; TME within its bound. Seeded by the
check's seed, so a run is repeatable."""

from __future__ import annotations

from sampling_harness.strategies.logits import logprob_batches
from sampling_harness.strategies.seeded import each_example
from sampling_harness.suites.logprobs.runs import run_modes, summarise
from sampling_harness.verdict import Outcome


def generated(ctx) -> Outcome:
    records: list[dict] = []

    def one_batch(batch):
        records.extend(run_modes(ctx, f"generated-{len(records) // 4}", batch))

    each_example(ctx.seed, ctx.budget.generated_batches,
                 logprob_batches(ctx.budget.generated_max_vocab), one_batch)
    return summarise(records, ("values", "ranks"),
                     "absolute error of a value beyond its float32 bound (largest bound "
                     "shown), or a rank off its range", tme_test=True)
