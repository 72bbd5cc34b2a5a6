"""The long-lived heap of a run's own processes, frozen once the run's imports are done.

A harness process (the CLI's, and each xdist worker it starts) holds a few million objects
that live until it exits: torch, SciPy, Triton, Hypothesis, the suites. Python's cyclic
collector walks all of them at every full collection: pytest collects five times as a
session ends (its unraisable-exception cleanup), and the interpreter once more as it tears
down: 2-3 s of a two-core CPU machine for each process of a run (docs/measurements/cpu.md:
`check sample --kernel torch-fp64` at smoke over two workers, about 20 -> 16.5 s of wall).
``gc.freeze`` moves them into a permanent generation that no collection walks; what the
run allocates afterwards is collected as before.

Only a process that the harness owns is frozen: the command line's, when it is the
program (``own_process``, set by ``python -m sampling_harness`` and the console script),
and the xdist workers of its runs. A harness run inside someone else's process (the
``main`` of a test, the pytest plugin in an engine's test session) leaves that heap alone.

At exit the frozen objects are left to the operating system. libtriton's bindings
(nanobind) then print a leak report as the interpreter tears its modules down, so stderr is
pointed at /dev/null once the exit handlers registered after the freeze have run (Triton
does the same in its own compile workers); the reports, the exit code and every line of
the run are written before that.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

_STATE = {"own": False, "frozen": False}


def own_process() -> None:
    """Mark this process as the harness's own (the command line run as a program)."""
    _STATE["own"] = True


def freeze(worker: bool) -> bool:
    """Freeze the heap of this process if the harness owns it (``worker``: an xdist worker
    of a harness run, or ``own_process`` called); once. Whether it is frozen."""
    if _STATE["frozen"] or not (worker or _STATE["own"]):
        return _STATE["frozen"]
    gc.freeze()
    atexit.register(_quiet_teardown)
    _STATE["frozen"] = True
    return True


def _quiet_teardown() -> None:
    """stderr to /dev/null for the interpreter's teardown (the bindings' leak report)."""
    try:
        sys.stderr.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    except OSError:
        pass
