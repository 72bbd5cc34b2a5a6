"""Splitting one false-fail budget across many tests.

A run promises a family-wise false-fail rate ``alpha`` (default 1e-4): the probability that
a correct kernel fails *any* check of the run. By the union (Bonferroni) bound, giving each
of ``m`` tests the level ``alpha / m`` keeps the family-wise rate at most ``alpha`` whatever
the dependence between tests. Checks split their share again among their sub-tests.
"""

from __future__ import annotations

DEFAULT_FAMILY_ALPHA = 1e-4


def bonferroni(alpha: float, tests: int) -> float:
    """Per-test level for ``tests`` tests sharing the family-wise level ``alpha``."""
    if tests < 1:
        raise ValueError("at least one test must share the budget")
    return alpha / tests


def adjusted_p(p_values: list[float]) -> float:
    """Bonferroni-adjusted p-value of a set of tests: ``min(1, m * min p)``; the set rejects
    at level ``alpha`` exactly when some test rejects at ``alpha / m``."""
    if not p_values:
        return 1.0
    return min(1.0, len(p_values) * min(p_values))
