"""Running the CLI as a user would: a subprocess, its exit code, its report."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path


def ctrl_c_as_a_terminal_sends_it() -> None:
    """(A child's preexec_fn.) SIGINT raises KeyboardInterrupt in the child, as under a
    terminal, even when the tests run in a background job that ignores SIGINT (a shell
    without job control starts `cmd &` so, and children inherit it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


IN_PROCESS = ("--isolation", "none")


def cli(*args: str, report_dir: Path | None = None, timeout: float = 900,
        workers: bool = False):
    """Run ``sampling-harness ARGS``; return (exit code, stdout + stderr, report or None).

    A ``check`` runs its checks in the CLI's own process (``--isolation none``) unless
    ``workers`` or the args say otherwise: a worker's start (torch and the suites imported
    again, about 5 s on a 2-core CI machine) buys nothing where no kernel faults. The worker
    path, the default for users, is tested where it is the subject: tests/test_faults.py,
    tests/test_xdist.py, the stop and kill tests of tests/test_cli.py, and the self-test's
    clean run of every kernel (tests/test_selftest.py)."""
    own = args[:1] == ("check",) and not workers and "--isolation" not in args
    command = [sys.executable, "-m", "sampling_harness", *args, *(IN_PROCESS if own else ())]
    if report_dir is not None:
        command += ["--report-dir", str(report_dir)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=ctrl_c_as_a_terminal_sends_it)
    report = None
    if report_dir is not None and (report_dir / "report.json").exists():
        report = json.loads((report_dir / "report.json").read_text())
    return done.returncode, done.stdout + done.stderr, report


def verdicts(report: dict) -> dict[str, str]:
    """check name -> verdict, for a report of one kernel."""
    return {c["name"]: c["verdict"] for c in report["checks"]}
