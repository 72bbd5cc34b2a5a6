"""Family ``logits-processors`` on batches drawn by Hypothesis
(suites/logits_processors/strategies.py): every dtype, every subset of processors, V just
off powers of two up to ``budget.generated_max_vocab``, histories up to
``budget.generated_max_history`` tokens, bitmasks covering V, narrower or wider. Each
batch's values against the float64 reference within the contract's bound. Seeded by the
check's seed, so a run is repeatable. Exact: no alpha."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from sampling_harness.strategies.seeded import examples
from sampling_harness.suites.logits_processors.compare import call, summarise
from sampling_harness.suites.logits_processors.strategies import processor_batches
from sampling_harness.verdict import Outcome


def generated(ctx) -> Outcome:
    budget = ctx.budget
    records: list[dict] = []

    @hypothesis_seed(ctx.seed)
    @settings(max_examples=budget.generated_batches, phases=[Phase.generate], database=None,
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(batch=processor_batches(budget.generated_max_vocab, budget.generated_max_history))
    def one_batch(batch):
        records.append(call(ctx, f"generated-{len(records)}", batch))

    examples(one_batch)
    return summarise(records, f"{len(records)} Hypothesis batches, V up to "
                              f"{budget.generated_max_vocab}, histories up to "
                              f"{budget.generated_max_history}")
