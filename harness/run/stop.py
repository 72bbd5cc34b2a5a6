"""How a run stops: SIGINT or SIGTERM ends it within seconds, its outputs INCOMPLETE, exit 2.

A stop (Ctrl-C; SIGTERM, as a CI job's time limit sends) must end the run whatever its
workers are doing, never with a traceback. Three rules make that so:

- the first signal raises KeyboardInterrupt only where pytest turns it into an interrupted
  session: inside the run's test loop (``stop_point``, entered by the plugin around
  ``pytest_runtestloop``); one that arrives before the loop raises as the loop starts, one
  that arrives after it is noted and changes nothing (every check has finished by then);
- later signals are ignored while the run ends (a second Ctrl-C, or a SIGTERM on the heels
  of a SIGINT, must not break into pytest's own interrupt handling);
- a deadline: ``DEADLINE`` seconds after the first signal, whatever the run is still doing,
  the registered hard stops run (the isolated run's workers are killed) and the process
  exits 2. The reports on disk were rewritten after every check with the run not complete,
  so they read INCOMPLETE.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

DEADLINE = 5.0        # seconds from the first stop signal to the process's exit, at most
HARD_STOPS: list = []   # callables run at the deadline (killing workers), in order


class _Stop:
    def __init__(self):
        self.armed = False          # inside the test loop: raise at once
        self.requested: int | None = None   # the first stop signal, once one came
        self.installed = False
        self.deadline = True        # a check run's; a command that raises at once has none


STOP = _Stop()


def _deadline() -> None:
    for hard_stop in list(HARD_STOPS):
        try:
            hard_stop()
        except Exception:
            pass
    print(f"sampling-harness: error: the run is INCOMPLETE: stopped by signal "
          f"{STOP.requested}; the report of the checks that finished is on disk",
          file=sys.stderr, flush=True)
    os._exit(2)


def _on_signal(signum, frame) -> None:
    if STOP.requested is not None:
        return                      # the run is already ending
    STOP.requested = signum
    if STOP.deadline:
        timer = threading.Timer(DEADLINE, _deadline)
        timer.daemon = True
        timer.start()
    if STOP.armed:
        STOP.armed = not STOP.deadline      # a command without a deadline stays armed
        raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def sigterm_stops(deferred: bool = True):
    """While inside, in the main thread: SIGTERM and SIGINT stop the run as the module says
    (SIGINT left alone where it is ignored: a background job). ``deferred`` false (a
    command that is not a pytest run: ``mutate``): the first signal raises KeyboardInterrupt
    wherever it lands, and there is no deadline. Elsewhere (a worker thread cannot take
    signals) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signal.SIGTERM: signal.getsignal(signal.SIGTERM),
                signal.SIGINT: signal.getsignal(signal.SIGINT)}
    handled = [signal.SIGTERM] + (
        [signal.SIGINT] if previous[signal.SIGINT] is signal.default_int_handler else [])
    for signum in handled:
        signal.signal(signum, _on_signal)
    STOP.installed, STOP.requested, STOP.armed = True, None, not deferred
    STOP.deadline = deferred
    try:
        yield
    finally:
        for signum in handled:
            signal.signal(signum, previous[signum])
        STOP.installed, STOP.armed = False, False


@contextlib.contextmanager
def stop_point():
    """(The plugin, around the test loop.) A stop raises KeyboardInterrupt here, where pytest
    turns it into an interrupted session; one already requested raises at once."""
    if not STOP.installed:
        yield
        return
    if STOP.requested is not None:
        raise KeyboardInterrupt(f"signal {STOP.requested}")
    STOP.armed = True
    try:
        yield
    finally:
        STOP.armed = False
