"""The harness from Python: run checks of a family on a kernel, get their verdicts back.

For another project's own tests::

    from sampling_harness.api import run_checks

    def test_my_sampler(tmp_path):
        result = run_checks("sample", "mypkg.race:sample", checks=["validity", "fit_curated"],
                            budget="smoke", report_dir=tmp_path)
        assert result.passed, result.summary

or the ``harness_checks`` fixture of the pytest plugin, which fills in ``report_dir``.
Each call is one harness run in a child process (``sampling-harness check``): its own pytest
session, its own report directory, the same false-fail budget split as the command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES
from sampling_harness.options import cli_args
from sampling_harness.verdict import Verdict, overall


@dataclass
class RunResult:
    """The verdicts of one run, its exit code and where its reports are."""

    code: int
    verdicts: list[Verdict]
    report_dir: Path
    output: str

    @property
    def passed(self) -> bool:
        return self.code == 0 and overall(self.verdicts) == "pass"

    @property
    def summary(self) -> str:
        path = self.report_dir / "summary.md"
        return path.read_text() if path.exists() else self.output[-4000:]


def _verdicts(report: Path) -> list[Verdict]:
    if not report.exists():
        return []
    return [Verdict(**check) for check in json.loads(report.read_text())["checks"]]


def run_checks(family: str, kernel: str, report_dir: str | Path, checks: list[str] = (),
               budget: str = "quick", device: str = "auto", seed: int | None = None,
               extra: list[str] = ()) -> RunResult:
    """Run ``checks`` (default: all) of ``family`` on ``kernel`` (a registered name,
    ``package.module:attr`` or ``path/to/file.py:attr``). Raises ``HarnessError`` with the
    harness's one-line reason when it could not run (exit 2)."""
    if family in FAMILIES:          # a misspelt check: its name and the family's, not "no
        for name in checks:         # checks selected"
            FAMILIES[family].check(name)
    report_dir = Path(report_dir)
    select = " or ".join(f"test_{name}" for name in checks) or None
    args = [sys.executable, "-m", "sampling_harness", "check", family,
            *cli_args({"kernel": [kernel], "budget": budget, "device": device,
                       "report_dir": report_dir}),
            *extra, *cli_args({"seed": seed, "select": select})]
    done = subprocess.run(args, capture_output=True, text=True)
    output = done.stdout + done.stderr
    if done.returncode == 2:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise HarnessError(lines[-1].removeprefix("sampling-harness: error: ") if lines
                           else f"the harness could not run {family} on {kernel}")
    return RunResult(done.returncode, _verdicts(report_dir / "report.json"), report_dir, output)
