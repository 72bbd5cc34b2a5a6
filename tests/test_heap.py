"""The heap of a process the harness owns is frozen for the run (sampling_harness.run.heap):
only such a process's, and its exit stays quiet."""

from __future__ import annotations

import subprocess
import sys

from helpers import cli

PROBE = """
import gc
from sampling_harness.run import heap
print(heap.freeze(worker=False), gc.get_freeze_count() > 0)
heap.own_process()
print(heap.freeze(worker=False), gc.get_freeze_count() > 0)
"""


def test_only_a_process_the_harness_owns_is_frozen():
    """A run inside another process (a test calling ``main``, an engine's pytest session)
    leaves its heap alone; the command line run as a program, or a worker, freezes it."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == ["False", "False", "True", "True"]


def test_a_worker_freezes_without_being_marked():
    done = subprocess.run(
        [sys.executable, "-c", "import gc\nfrom sampling_harness.run import heap\n"
         "print(heap.freeze(worker=True), gc.get_freeze_count() > 0)"],
        capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["True", "True"]


def test_the_command_line_runs_frozen_and_exits_quietly(tmp_path):
    """A check of a Triton kernel run by the program: its heap frozen during the run, and
    libtriton's leak report (of the objects left to the operating system) not printed."""
    code, output, report = cli("check", "sample", "--kernel", "triton-exact", "-k",
                               "test_tail", "--budget", "smoke", report_dir=tmp_path)
    assert code == 0 and report["verdict"] == "pass", output
    assert "nanobind" not in output and "leaked" not in output, output
