"""Hypothesis strategies that several families draw from, composed from small named pieces,
and the seeded runner of every check's Hypothesis examples.

``probs``: probability rows and tables (``sample``; ``normalised`` and the row pieces under
every other module); ``rejection``: ragged batches of target and draft laws (``rejection``;
``repaired`` for ``tree-rejection``); ``logits``: logit rows and sampling settings
(``logprobs`` and ``sample-logits``); ``seeded``: ``each_example``, the examples of a
strategy as a function of the check's seed alone. A strategy one family alone draws from
lives in that family's suite (suites/<family>/strategies.py).
"""

from sampling_harness.strategies.probs import (  # noqa: F401  (the names suites import)
    AWKWARD_VOCABS,
    logit_shapes,
    normalised,
    probs_rows,
    probs_tables,
    row_seeds,
    vocab_sizes,
    zero_fractions,
)
