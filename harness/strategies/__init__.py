"""Hypothesis strategies, one module per family's inputs, composed from small named pieces.

``probs``: probability rows and tables (family ``sample``); ``rejection``: ragged batches of
target and draft laws (family ``rejection``).
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
