"""A kernel that crashes, aborts, exits or hangs fails its check, and the run goes on.

Each faulty kernel of ``tests/faulty_kernels.py`` faults on fit_curated's large batch only,
beside a correct kernel in one run: the faulty kernel's fit_curated FAILs with its cause, its
other checks run in a fresh worker, the correct kernel's verdicts are those of a run without
it, and report.json, junit.xml, summary.md and report.html are all complete.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import cli, ctrl_c_as_a_terminal_sends_it

KERNELS = Path(__file__).with_name("faulty_kernels.py")
CHECKS = ("-k", "test_fit_curated or test_batch_invariance or test_tail")
# the alpha split of the paired run, pinned so that the run alone draws the same batches
SPLIT = ("--statistical-checks", "4")
CALL_TIMEOUT = "10"
FAULTS = {
    "segfaults": "the process was killed by SIGSEGV (Segmentation fault) in a kernel call",
    "aborts": "the process was killed by SIGABRT (Aborted) in a kernel call",
    "exits": "the process exited with status 3 in a kernel call",
    "hangs_holding_the_interpreter_lock": "did not return within 10 s in a kernel call",
}
STOP_TRIALS = int(os.environ.get("SAMPLING_HARNESS_STOP_TRIALS", "4"))


def _run(tmp_path: Path, *kernels: str):
    args = ["check", "sample", "--device", "cpu", "--budget", "smoke", "--call-timeout",
            CALL_TIMEOUT, *CHECKS, *SPLIT]
    for kernel in kernels:
        args += ["--kernel", f"{KERNELS}:{kernel}"]
    return cli(*args, report_dir=tmp_path, timeout=600, workers=True)


def _comparable(check: dict) -> tuple:
    return (check["name"], check["verdict"], check["p_value"], check["statistic"],
            check["samples"])


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """The correct kernel's verdicts in a run of its own (one run for all xdist workers:
    the first to come makes it, under a lock, the others read its report)."""
    shared = tmp_path_factory.getbasetemp().parent / "faults-alone"
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "report.json").exists():
            code, output, _ = _run(shared, "race")
            assert code == 0, output[-3000:]
    report = json.loads((shared / "report.json").read_text())
    return sorted(_comparable(c) for c in report["checks"])


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_faulting_kernel_fails_its_check_and_the_run_goes_on(fault, alone, tmp_path):
    code, output, report = _run(tmp_path, fault, "race")
    assert code == 1 and "Traceback" not in output, output[-3000:]
    assert report["complete"] is True and report["verdict"] == "fail"
    faulty = {c["name"]: c for c in report["checks"] if c["kernel"].endswith(f":{fault}")}
    correct = [c for c in report["checks"] if c["kernel"].endswith(":race")]
    assert faulty["fit_curated"]["verdict"] == "fail"
    message = faulty["fit_curated"]["message"]
    assert message.startswith(f"kernel fault: {FAULTS[fault]} (probs ["), message
    assert "seed " in message and faulty["fit_curated"]["reproduce"].startswith(
        "sampling-harness check sample --kernel ")
    assert faulty["batch_invariance"]["verdict"] == "pass"    # before or after: either way
    assert faulty["tail"]["verdict"] == "pass"
    assert sorted(_comparable(c) for c in correct) == alone
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert int(suite.get("failures")) == 1
    assert "kernel fault: " in (tmp_path / "summary.md").read_text()
    assert "kernel fault: " in (tmp_path / "report.html").read_text()


def _stop_once(tmp_path: Path, stop: signal.Signals, delay: float) -> tuple[int, str, float]:
    """Start a run whose kernel hangs in native code on its first call, stop it ``delay``
    seconds after its first line; (exit code, output, seconds from the signal to the end)."""
    command = [sys.executable, "-m", "sampling_harness", "check", "sample", "--kernel",
               f"{KERNELS}:hangs_on_every_call", "--device", "cpu", "--budget", "smoke",
               *CHECKS, "--report-dir", str(tmp_path)]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={**os.environ, "PYTHONUNBUFFERED": "1"},
                           preexec_fn=ctrl_c_as_a_terminal_sends_it)
    first = run.stdout.readline()
    time.sleep(delay)
    run.send_signal(stop)
    sent = time.monotonic()
    try:
        rest, _ = run.communicate(timeout=60)
    finally:
        run.kill()
    return run.returncode, first + (rest or ""), time.monotonic() - sent


@pytest.mark.long(50)
def test_a_stop_always_stops(tmp_path):
    """SIGINT or SIGTERM, at a random moment of the run's start or while its worker is stuck
    in native code: exit 2 within 10 s, INCOMPLETE, never a traceback
    (SAMPLING_HARNESS_STOP_TRIALS repeats; docs/measurements has the record of 50)."""
    chance = random.Random(50)
    for trial in range(STOP_TRIALS):
        stop = (signal.SIGINT, signal.SIGTERM)[trial % 2]
        delay = chance.uniform(0.0, 6.0)
        code, output, seconds = _stop_once(tmp_path / f"trial-{trial}", stop, delay)
        said = f"trial {trial}: {stop.name} after {delay:.1f} s"
        assert code == 2, f"{said}: exit {code}\n{output[-3000:]}"
        assert "Traceback" not in output, f"{said}\n{output[-3000:]}"
        assert "INCOMPLETE" in output, f"{said}\n{output[-3000:]}"
        assert seconds < 10, f"{said}: {seconds:.1f} s"
