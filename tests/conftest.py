"""Tests run the Triton kernels through the interpreter on machines without a GPU."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
