"""Tests run the Triton kernels through the interpreter on machines without a GPU."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

if os.environ.get("PYTEST_XDIST_WORKER"):      # `pytest -n 2` (CI): one core a worker, and
    os.environ.setdefault("OMP_NUM_THREADS", "1")   # the same for the CLI runs it starts
    torch.set_num_threads(1)
