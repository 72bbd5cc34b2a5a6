"""The order in which xdist workers take the checks: longest first, dealt as cards.

A run on W workers lasts at least as long as its longest check, and longer when that check
starts late. Every worker collects the checks alike and orders them here
(``for_workers``): longest first by the durations the last runs remembered, else by those
shipped with the harness (harness/scale/durations.py), a check timed nowhere as its family's
declaration suggests
(``many_shapes``: compiled kernels compile a variant per shape), then dealt to the
workers, since xdist's work stealing hands worker i the i-th contiguous part.
"""

from __future__ import annotations

import collections
import math


def for_workers(items, seconds: dict[str, float], workers: int,
                measured: dict[str, float] | None = None) -> None:
    """Order ``items`` in place for ``workers`` xdist workers (module docstring)."""
    longest_first(items, seconds, measured)
    dealt(items, workers)


def _kernel(item):
    """The kernel a check item runs, or None."""
    return getattr(item, "kernel", None)


def label(item) -> str:
    """"kernel/check": how the shipped durations name a check (node ids depend on where the
    suites are installed)."""
    check = getattr(item, "originalname", item.name).removeprefix("test_")
    return f"{getattr(_kernel(item), 'name', None)}/{check}"


def longest_first(items, seconds: dict[str, float],
                  measured: dict[str, float] | None = None) -> None:
    """The checks longest first, by ``seconds`` (node id -> the latest run's,
    sampling_harness.scale.durations), else by ``measured`` ("kernel/check" -> seconds shipped with
    the
    harness). A check timed nowhere counts as longest if declared ``many_shapes``, else as
    shortest; ties (all of them, the first time) as ``many_shapes_first`` orders them."""
    many_shapes_first(items)
    measured = measured or {}

    def estimate(item) -> float:
        if item.nodeid in seconds:
            return seconds[item.nodeid]
        if label(item) in measured:
            return measured[label(item)]
        return math.inf if item.get_closest_marker("many_shapes") is not None else 0.0

    items.sort(key=lambda item: -estimate(item))      # stable: ties keep that order


def dealt(items, workers: int) -> None:
    """Deal the ordered checks to ``workers`` hands, as cards: xdist's work-stealing
    scheduler gives worker i the i-th contiguous part of the collection, so part i holds the
    checks i, i + W, i + 2 W, ... of the order (each worker a fair share of the long ones,
    longest first); idle workers then steal what is left."""
    if workers > 1:
        items[:] = [item for hand in range(workers) for item in items[hand::workers]]


def many_shapes_first(items) -> None:
    """The checks declared ``many_shapes`` first; in each part, the checks of
    kernels under test (which may compile) before the baselines' (torch, which compile
    nothing), and the kernels taking turns: one check of each, then a second of each, so
    that workers starting together compile different kernels, and a kernel's later checks
    find its variants in Triton's cache instead of compiling them again side by side;
    otherwise in collection order."""
    turns: collections.Counter = collections.Counter()
    keys = {}
    for item in items:
        kernel = _kernel(item)
        many = item.get_closest_marker("many_shapes") is not None
        role = getattr(kernel, "role", "kernel")
        turn = turns[many, getattr(kernel, "name", None)]
        turns[many, getattr(kernel, "name", None)] += 1
        keys[id(item)] = (not many, role != "kernel", turn)
    items.sort(key=lambda item: keys[id(item)])
