"""The worker's side of fault isolation: what it is doing, written down before it does it.

Kernel calls run in pytest-xdist workers that the harness owns (``--isolation worker``, the
default; ``sampling_harness.run.crashes`` is the controller's side). A kernel that faults
takes its worker down, or leaves it unusable; either way the worker can no longer say
which check broke and why. So each worker keeps one small file in the run's fault folder,
rewritten as it goes:

- when a check starts, the verdict that check would get if its kernel faulted now (the
  check's name, kernel, seed, reproduce command; ``checking``);
- before each kernel call, the call: its shapes and seed, when it started and its timeout
  (``calling``); after it, the call is struck out (``returned``).

``faulthandler`` writes the traceback of a fatal signal (SIGSEGV, SIGABRT, SIGBUS, SIGFPE,
SIGILL) beside it. A call that holds the interpreter lock past its timeout (native code
that never returns) cannot be stopped by the runner's join, nor by anything in its own
process: the controller's watchdog reads the call's file and kills the worker ``GRACE``
seconds after the timeout (``sampling_harness.run.crashes``). The call's file is two
system calls a kernel call; arming faulthandler's own watchdog instead cost 0.6 ms a call.

Some faults leave the worker alive but unusable: a sticky CUDA error (device-side assert,
illegal or misaligned address, launch failure: the process's CUDA context is lost) or a
call still running past its timeout (a GPU kernel that never ends, a thread that never
returns). The runner marks the worker ``spoiled``; once the check's verdict is made, the
worker writes it to its file and exits (``retire_if_spoiled``); xdist starts a fresh
worker for the checks that remain. The worker and the faulty call's inputs are never used
again.

Outside a worker (``--isolation none``, the plugin in another project's pytest) every
function here does nothing.
"""

from __future__ import annotations

import faulthandler
import json
import os
import re
import time
from pathlib import Path

GRACE = 2.0               # seconds past a call's timeout before the watchdog ends the worker
RETIRE_DEADLINE = 30.0    # seconds a spoiled worker may take to make its check's verdict
RETIRED = 75              # a spoiled worker's exit status (EX_TEMPFAIL)
STATE = "{worker}.json"   # the check a worker runs, in the run's fault folder
CALL = "{worker}.call"    # the kernel call in flight, or the count of those returned
TRACEBACK = "{worker}.fault"   # faulthandler's output of that worker
PID = "{worker}.pid"

# what a sticky CUDA error looks like, from torch (AcceleratorError) or Triton's launcher
STICKY = re.compile(r"CUDA error|cudaError|illegal memory access|illegal address|"
                    r"device-side assert|misaligned address|unspecified launch failure|"
                    r"Triton Error \[CUDA\]")


def sticky_cuda_error(exc: BaseException) -> bool:
    """The error leaves the process's CUDA context unusable (every later CUDA call fails)."""
    return type(exc).__name__ == "AcceleratorError" or bool(STICKY.search(str(exc)))


class Watch:
    """One worker's files of what it is doing (see the module's docstring)."""

    def __init__(self, folder: Path, worker: str):
        self.folder = folder
        self.worker = worker
        self.state_fd = _open(folder / STATE.format(worker=worker))
        self.call_fd = _open(folder / CALL.format(worker=worker))
        self.traceback = open(folder / TRACEBACK.format(worker=worker), "w")  # noqa: SIM115
        (folder / PID.format(worker=worker)).write_text(str(os.getpid()))
        self.state: dict = {"pid": os.getpid()}
        self.calls = 0
        self.in_call = False
        self.spoiled: str | None = None
        _rewrite(self.state_fd, self.state)

    def checking(self, verdict: dict, statistical_checks: int) -> None:
        # here, not once at the start: pytest's own faulthandler plugin writes to stderr
        faulthandler.enable(file=self.traceback, all_threads=True)
        self.state = {"pid": os.getpid(), "check": verdict, "started": time.time(),
                      "statistical_checks": statistical_checks}
        self.calls = 0
        _rewrite(self.state_fd, self.state)
        _rewrite(self.call_fd, {"calls": 0})

    def calling(self, note: str, timeout: float) -> None:
        self.in_call = True
        _rewrite(self.call_fd, {"calls": self.calls, "note": note, "timeout": timeout,
                                "started": time.time()})

    def returned(self) -> None:
        self.calls += 1
        self.in_call = False
        _rewrite(self.call_fd, {"calls": self.calls})

    def spoil(self, why: str) -> None:
        """The worker cannot run another check; the controller's watchdog still ends it
        should making this check's verdict hang (a CUDA call behind a kernel that never
        ends)."""
        self.spoiled = why
        if not self.in_call:
            _rewrite(self.call_fd, {"calls": self.calls, "spoiled": why,
                                    "started": time.time(), "timeout": RETIRE_DEADLINE})

    def retire(self, carried: str, outcome: str, wasxfail: str | None) -> None:
        """Hand the check's verdict (``xdist_gpus.pack``'s JSON) to the controller and exit."""
        self.state.update({"retired": carried, "outcome": outcome, "wasxfail": wasxfail,
                           "why": self.spoiled})
        _rewrite(self.state_fd, self.state)
        self.traceback.flush()
        os._exit(RETIRED)


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)


def _rewrite(fd: int, body: dict) -> None:
    """Rewrite a small file in place: two system calls. Written before the kernel runs, so a
    fault never finds it half written."""
    data = json.dumps(body).encode()
    os.pwrite(fd, data, 0)
    os.ftruncate(fd, len(data))


WATCH: Watch | None = None      # this process's, when it is a worker of an isolated run


def watch(folder: str | Path, worker: str) -> Watch:
    """(A worker, once.) Start keeping this worker's file."""
    global WATCH
    if WATCH is None:
        WATCH = Watch(Path(folder), worker)
    return WATCH


def checking(verdict: dict, statistical_checks: int) -> None:
    """A check starts: ``verdict`` is the one it gets if its kernel faults (message empty)."""
    if WATCH is not None:
        WATCH.checking(verdict, statistical_checks)


def calling(note: str, timeout: float) -> None:
    """A kernel call starts (``note``: its shapes and seed)."""
    if WATCH is not None:
        WATCH.calling(note, timeout)


def returned() -> None:
    """The kernel call returned (raising or not)."""
    if WATCH is not None:
        WATCH.returned()


LOST: str | None = None         # the check after which this process may run no other


def spoil(why: str, check: str = "", cuda: bool = True) -> None:
    """This process must run no further check: a sticky CUDA error, a call still running.
    A worker retires. A process that cannot (``--isolation none``) runs no more checks after
    a ``cuda`` fault (its context lost or its stream stuck), so no later check's kernel is
    blamed for it; after a CPU call left running it goes on (the thread is a daemon)."""
    global LOST
    if cuda:
        LOST = LOST or f"{why} in {check}".strip()
    if WATCH is not None:
        WATCH.spoil(why)


class ProcessLost(Exception):
    """(``--isolation none``.) An earlier check's fault spoiled this process: the harness
    cannot run this check here (its error, never this check's kernel's failure)."""


def demand_usable() -> None:
    """Raise ``ProcessLost`` where an earlier check spoiled this process."""
    if LOST is not None:
        raise ProcessLost(f"not run: this process can run no more checks after {LOST}; "
                          f"--isolation worker (the default) runs the rest in a fresh worker")


def retire_if_spoiled(item, report) -> None:
    """(A worker, after a check's call report is made.) A spoiled worker hands the check's
    verdict to the controller through its file and exits."""
    if WATCH is None or WATCH.spoiled is None or report.when != "call":
        return
    from sampling_harness.scale.xdist_gpus import VERDICT

    carried = next((value for name, value in item.user_properties if name == VERDICT), None)
    if carried is not None:
        WATCH.retire(carried, report.outcome, getattr(report, "wasxfail", None))
