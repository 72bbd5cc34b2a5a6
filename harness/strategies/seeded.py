"""Hypothesis draws that are a function of the check's seed alone.

Hypothesis 6.131 and later mix into its draws literal constants read from every *local*
module in ``sys.modules`` (modules outside site-packages whose file name does not start
with ``test_``). For the harness that makes a generated batch depend on which modules the
process happened to import before the check (other families' checks, the kernels of the
run, a user's own kernel module) and on how the project is installed (editable or not):
``reproduce`` would not redraw the batches of the run it reproduces. ``examples`` runs a
check's Hypothesis test with that pool empty; Hypothesis's built-in constants stay.

``each_example`` is the one runner of the checks: ``count`` examples of a strategy, drawn in
the generate phase alone (no shrinking, no database, no deadline, no health check), from a
Hypothesis random seeded by the check's seed, so that a run and its ``reproduce`` draw the
same examples in the same order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.strategies import SearchStrategy


@contextlib.contextmanager
def without_local_constants() -> Iterator[None]:
    """Hypothesis's pool of constants from local code, empty for the duration (a no-op on a
    Hypothesis without one)."""
    try:
        from hypothesis.internal.conjecture import providers
        pool, cache = providers._get_local_constants, providers.CONSTANTS_CACHE
        empty = type(providers.GLOBAL_CONSTANTS)()
    except (ImportError, AttributeError):
        yield
        return
    cache.cache.clear()
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = pool
        cache.cache.clear()


def examples(test) -> None:
    """Run ``test``, a ``@given`` function with ``@seed`` and ``@settings`` applied, drawing
    from the strategies and the check's seed only."""
    with without_local_constants():
        test()


def each_example(seed: int, count: int, strategy: SearchStrategy, each: Callable) -> None:
    """Call ``each(value)`` on ``count`` values drawn from ``strategy``, in Hypothesis's
    order, as a function of ``seed`` alone (Hypothesis's first example is its simplest)."""

    @hypothesis_seed(seed)
    @settings(max_examples=count, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(value=strategy)
    def one(value):
        each(value)

    examples(one)
