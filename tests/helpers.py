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


def cli(*args: str, report_dir: Path | None = None, timeout: float = 900):
    """Run ``sampling-harness ARGS``; return (exit code, stdout + stderr, report or None)."""
    command = [sys.executable, "-m", "sampling_harness", *args]
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
