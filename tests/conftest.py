"""Tests run the Triton kernels through the interpreter on machines without a GPU."""

import json
import os
import tempfile
from pathlib import Path

import torch

from sampling_harness.device import use_triton_interpreter_without_gpu

use_triton_interpreter_without_gpu()

# the harness runs that tests start remember their checks' durations here, not in the
# user's cache (harness/scale/durations.py)
os.environ.setdefault("SAMPLING_HARNESS_CACHE", tempfile.mkdtemp(prefix="harness-cache-"))

if os.environ.get("PYTEST_XDIST_WORKER"):      # `pytest -n 2` (CI): one core a worker, and
    os.environ.setdefault("OMP_NUM_THREADS", "1")   # the same for the CLI runs it starts
    torch.set_num_threads(1)


MEASURED = json.loads((Path(__file__).parent / "durations.json").read_text())


def pytest_collection_modifyitems(config, items):
    """The long tests first, longest first (``@pytest.mark.long(seconds)``, or the seconds
    tests/durations.json holds: each test of 10 s or more in a CI rehearsal, pytest
    ``--durations``, setup and call): pytest-xdist hands the first items out in turn, so
    each worker starts on a long one and the short ones fill the end, instead of a
    five-minute test starting last and running alone. A test in neither counts 0."""
    def seconds(item) -> float:
        mark = item.get_closest_marker("long")
        return max(mark.args[0] if mark else 0.0, MEASURED.get(item.nodeid, 0.0))

    items.sort(key=seconds, reverse=True)        # stable: the rest keep their order
    worker = getattr(config, "workerinput", {})       # xdist sets a worker's dist to "no"
    workers = int(worker.get("workercount", 1))
    if "worksteal" in " ".join(worker.get("mainargv", ())) and workers > 1:
        # worksteal deals the list out in contiguous shares, one a worker, and an idle
        # worker steals the back half of another's pending tests: dealt round-robin first,
        # each share starts with its own long tests, longest first
        items[:] = [item for start in range(workers) for item in items[start::workers]]
