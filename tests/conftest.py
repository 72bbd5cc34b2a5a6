"""Tests run the Triton kernels through the interpreter on machines without a GPU."""

import os
import tempfile

import torch

from sampling_harness.device import use_triton_interpreter_without_gpu

use_triton_interpreter_without_gpu()

# the harness runs that tests start remember their checks' durations here, not in the
# user's cache (harness/scale/durations.py)
os.environ.setdefault("SAMPLING_HARNESS_CACHE", tempfile.mkdtemp(prefix="harness-cache-"))

if os.environ.get("PYTEST_XDIST_WORKER"):      # `pytest -n 2` (CI): one core a worker, and
    os.environ.setdefault("OMP_NUM_THREADS", "1")   # the same for the CLI runs it starts
    torch.set_num_threads(1)
