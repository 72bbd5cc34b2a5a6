"""The controller's side of fault isolation: a worker that died becomes its check's verdict.

Every check of an isolated run (``--isolation worker``, the default) runs in a
pytest-xdist worker. When one dies (a signal, an exit, faulthandler's watchdog, or a
worker retiring after a fault that spoiled it: ``sampling_harness.run.faults``), xdist
replaces it, hands the rest of its checks to the others and reports the check it was
running as "crashed" (``pytest_handlecrashitem``). Here that report becomes the check's
verdict, read from the file the worker kept:

- a retired worker's file holds the verdict its check reached (a sticky CUDA error, a
  call past its timeout): that verdict, as if the worker had sent it;
- a call in flight: FAIL, ``kernel fault: <cause>``, the cause the signal's name, the exit
  status, or "did not return within N s" (the watchdog fired), with the call's shapes and
  seed; on a GPU also the ``--sanitize memcheck`` command that locates a bad access;
- a check that had called its kernel but was between calls: FAIL, the same cause, said so;
- no check, or no call yet: the harness's own error (exit 2): the kernel never ran.

A stop (``stop_workers``) kills every worker at once: SIGKILL, since one stuck in a GPU
kernel or native code takes no other signal, and the run's outputs then read INCOMPLETE.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from sampling_harness.run import faults, stop
from sampling_harness.scale import xdist_gpus

INPUT = "sampling_harness_faults"     # workerinput key: the run's fault folder
EXIT_WAIT = 5.0                       # seconds to wait for a dead worker's exit status


def cause(status: int | None, traceback: str, call: dict | None, died: float) -> str:
    """Why a worker died, in words: the watchdog's timeout, a signal, or an exit status."""
    if call is not None and ("Timeout (" in traceback or (
            status == 1 and died - call["started"] >= call["timeout"])):
        return f"did not return within {call['timeout']:g} s"
    if status is not None and status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"the process was killed by {name}" + (
            f" ({signal.strsignal(-status)})" if signal.strsignal(-status) else "")
    fatal = next((line.removeprefix("Fatal Python error: ").strip()
                  for line in traceback.splitlines() if line.startswith("Fatal Python error")),
                 None)
    if fatal:
        return f"the process died: {fatal}"
    if status is not None:
        return f"the process exited with status {status}"
    return "the process died (exit status unknown)"


def fault_message(state: dict, why: str) -> str:
    """The one-line reason of a check whose worker died (``state``: the worker's file)."""
    verdict, call = state["check"], state.get("call")
    where = f"in a kernel call ({call['note']})" if call is not None else (
        f"between kernel calls, after {state.get('calls', 0)} returned (memory it corrupted, "
        f"or a thread it left running)")
    text = f"kernel fault: {why} {where}; a fresh worker ran the remaining checks"
    if verdict.get("device", "").startswith("cuda"):
        text += f"; locate a bad access: {verdict['reproduce']} --sanitize memcheck"
    return text


def _exit_status(node) -> int | None:
    """The dead worker's exit status, where execnet lets us see its process."""
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    if popen is None:
        return None
    try:
        return popen.wait(timeout=EXIT_WAIT)
    except Exception:
        return None


class Crashes:
    """(The xdist controller of an isolated run.) The fault folder, its workers' files, and
    the verdicts of the checks whose worker died."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.folder = Path(tempfile.mkdtemp(prefix="sampling-harness-faults-"))
        self.stopped = False
        stop.HARD_STOPS.append(self.stop_workers)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput[INPUT] = str(self.folder)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem, report, sched):
        if self.stopped:
            return
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
        status = _exit_status(getattr(report, "node", None))
        died = time.time()
        state = _read_json(self.folder / faults.STATE.format(worker=worker))
        traceback = _read_text(self.folder / faults.TRACEBACK.format(worker=worker))
        if state.get("retired"):
            body = json.loads(state["retired"])
            _carry(report, body, state.get("outcome", "failed"), state.get("wasxfail"))
            return
        check = state.get("check")
        if check is None or (state.get("call") is None and not state.get("calls")):
            why = cause(status, traceback, None, died)
            report.longrepr = (f"harness error: the worker running {crashitem} died before "
                               f"the kernel was called: {why}")
            return
        verdict = dict(check)
        verdict["message"] = fault_message(state, cause(status, traceback, state.get("call"),
                                                        died))
        verdict["duration"] = round(died - state.get("started", died), 3)
        verdict["details"] = {**verdict.get("details", {}), "fault": True,
                              "exit_status": status,
                              "kernel_calls": state.get("calls", 0)}
        as_expected = verdict.get("expected") in ("fail", "either")
        body = {"verdict": verdict, "statistical_checks": state.get("statistical_checks", 0)}
        _carry(report, body, "skipped" if as_expected else "failed",
               f"failed as stated ({verdict.get('why', '')})" if as_expected else None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            self.stop_workers()

    def stop_workers(self) -> None:
        """Kill every worker of the run now (a stop: the run ends within seconds)."""
        self.stopped = True
        for path in self.folder.glob("*.pid"):
            try:
                pid = int(path.read_text())
            except (OSError, ValueError):
                continue
            if _child_of_this_process(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def pytest_unconfigure(self, config):
        if self.stop_workers in stop.HARD_STOPS:
            stop.HARD_STOPS.remove(self.stop_workers)
        shutil.rmtree(self.folder, ignore_errors=True)


def _carry(report, body: dict, outcome: str, wasxfail: str | None) -> None:
    """Make xdist's crash report the check's call report, carrying ``body`` (a verdict)."""
    report.when = "call"
    report.outcome = outcome
    report.longrepr = body["verdict"]["message"] if outcome == "failed" else None
    if wasxfail is not None:
        report.wasxfail = wasxfail
    report.user_properties = [(xdist_gpus.VERDICT, json.dumps(body))]


def _child_of_this_process(pid: int) -> bool:
    """``pid`` is a live child of this process (a pid file never kills a stranger)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]) == os.getpid()
    except (OSError, IndexError, ValueError):
        return os.name != "posix" or not Path("/proc").exists()


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
