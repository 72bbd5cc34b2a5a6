"""Family ``logits-processors`` on batches drawn by Hypothesis
(suites/logits_processors/strategies.py): every dtype, every subset of processors, V just
off powers of two up to ``budget.generated_max_vocab``, histories up to
``budget.generated_max_history`` tokens, bitmasks covering V, narrower or wider. Each
batch's values against the float64 reference within the contract's bound. Seeded by the
check's seed, so a run is repeatable. Exact: no alpha."""

from __future__ import annotations

from sampling_harness.strategies.seeded import each_example
from sampling_harness.suites.logits_processors.compare import call, summarise
from sampling_harness.suites.logits_processors.strategies import processor_batches
from sampling_harness.verdict import Outcome


def generated(ctx) -> Outcome:
    budget = ctx.budget
    records: list[dict] = []

    def one_batch(batch):
        records.append(call(ctx, f"generated-{len(records)}", batch))

    batches = processor_batches(budget.generated_max_vocab, budget.generated_max_history)
    each_example(ctx.seed, budget.generated_batches, batches, one_batch)
    return summarise(records, f"{len(records)} Hypothesis batches, V up to "
                              f"{budget.generated_max_vocab}, histories up to "
                              f"{budget.generated_max_history}")
