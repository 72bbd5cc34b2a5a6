"""How a long command stops: SIGTERM (a CI job's time limit, ``timeout``) as Ctrl-C."""

from __future__ import annotations

import contextlib
import signal
import threading


@contextlib.contextmanager
def sigterm_stops():
    """While inside, in the main thread: SIGTERM raises KeyboardInterrupt, as Ctrl-C does,
    so that a run ends its children and writes its reports (INCOMPLETE, exit code 2).
    Elsewhere (a worker thread cannot take signals) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
