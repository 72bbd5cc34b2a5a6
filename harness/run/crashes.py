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

The watchdog: a thread that reads every worker's call file twice a second and kills (SIGKILL)
a worker whose call is ``faults.GRACE`` seconds past its timeout (one that holds the
interpreter lock cannot be stopped from inside), or that was spoiled ``RETIRE_DEADLINE``
seconds ago and has not retired; its check then reads "did not return within N s".

A stop (``stop_workers``) kills every worker at once: SIGKILL, since one stuck in a GPU
kernel or native code takes no other signal, and the run's outputs then read INCOMPLETE.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from sampling_harness.run import faults, stop
from sampling_harness.scale import xdist_gpus

INPUT = "sampling_harness_faults"     # workerinput key: the run's fault folder
EXIT_WAIT = 5.0                       # seconds to wait for a dead worker's exit status
POLL = 0.5                            # seconds between the watchdog's reads


def cause(status: int | None, traceback: str, killed: str | None) -> str:
    """Why a worker died, in words: the watchdog's kill, a signal, or an exit status."""
    if killed is not None:
        return killed
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


def fault_message(state: dict, call: dict, why: str) -> str:
    """The one-line reason of a check whose worker died (``state``, ``call``: its files)."""
    verdict = state["check"]
    where = f"in a kernel call ({call['note']})" if "note" in call else (
        f"between kernel calls, after {call.get('calls', 0)} returned (memory it corrupted, "
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
        self.killed: dict[str, str] = {}      # worker -> why the watchdog killed it
        self.watchdog = threading.Thread(target=self._watch, name="sampling-harness-watchdog",
                                         daemon=True)
        self.watchdog.start()
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
        call = _read_json(self.folder / faults.CALL.format(worker=worker))
        traceback = _read_text(self.folder / faults.TRACEBACK.format(worker=worker))
        killed = self.killed.pop(worker, None)
        _clear(self.folder / faults.CALL.format(worker=worker))   # the watchdog's, read
        if state.get("retired"):
            body = json.loads(state["retired"])
            _carry(report, body, state.get("outcome", "failed"), state.get("wasxfail"))
            return
        check = state.get("check")
        if check is None or ("note" not in call and not call.get("calls")):
            why = cause(status, traceback, killed)
            report.longrepr = (f"harness error: the worker running {crashitem} died before "
                               f"the kernel was called: {why}")
            return
        verdict = dict(check)
        verdict["message"] = fault_message(state, call, cause(status, traceback, killed))
        verdict["duration"] = round(died - state.get("started", died), 3)
        verdict["details"] = {**verdict.get("details", {}), "fault": True,
                              "exit_status": status,
                              "kernel_calls": call.get("calls", 0)}
        as_expected = verdict.get("expected") in ("fail", "either")
        body = {"verdict": verdict, "statistical_checks": state.get("statistical_checks", 0)}
        _carry(report, body, "skipped" if as_expected else "failed",
               f"failed as stated ({verdict.get('why', '')})" if as_expected else None)

    def _watch(self) -> None:
        """(Its own thread.) Kill a worker whose call, or whose retiring, overran."""
        while not self.stopped:
            time.sleep(POLL)
            for path in list(self.folder.glob("*.call")):
                call, worker = _read_json(path), path.stem
                if "started" not in call or worker in self.killed:
                    continue
                if time.time() > call["started"] + call["timeout"] + faults.GRACE:
                    self.killed[worker] = (
                        f"did not return within {call['timeout']:g} s" if "note" in call else
                        f"its worker, spoiled by {call.get('spoiled')}, did not retire "
                        f"within {call['timeout']:g} s")
                    _kill(self.folder / faults.PID.format(worker=worker))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            self.stop_workers()

    def stop_workers(self) -> None:
        """Kill every worker of the run now (a stop: the run ends within seconds)."""
        self.stopped = True
        for path in self.folder.glob("*.pid"):
            _kill(path)

    def pytest_unconfigure(self, config):
        self.stopped = True
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


def _kill(pid_file: Path) -> None:
    """SIGKILL the worker whose pid the file holds, if it is still this process's child."""
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return
    if _child_of_this_process(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


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


def _clear(path: Path) -> None:
    try:
        path.write_text("{}")
    except OSError:
        pass


def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
