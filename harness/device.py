"""Which device a run uses, decided in one place: the GPU torch sees, else the CPU.

``--device auto`` (the default) means CUDA when torch sees a GPU and the CPU otherwise; asking
for CUDA on a machine without one is a ``HarnessError``. On a CPU the Triton kernels run
only through Triton's interpreter, which must be chosen before triton is first imported.
"""

from __future__ import annotations

import os

import torch

from sampling_harness.errors import HarnessError


def default_device() -> str:
    """``"cuda"`` when torch sees a GPU, else ``"cpu"``: what ``--device auto`` means."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(device: str) -> torch.device:
    """The torch device of a ``--device`` value (``auto``, ``cuda``, ``cpu``, ...)."""
    if device == "auto":
        device = default_device()
    if device == "cuda" and not torch.cuda.is_available():
        raise HarnessError("--device cuda asked for, but torch sees no CUDA device")
    return torch.device(device)


def use_triton_interpreter_without_gpu(env: dict | None = None) -> None:
    """Triton kernels run on a CPU only through its interpreter, which must be chosen before
    triton is first imported: choose it in ``env`` (default: this process's environment)
    when torch sees no GPU (an explicit setting wins). Called by the harness's own processes
    (its CLI, and a pytest run once it selects harness checks: ``sampling_harness.run.
    plugin``) and by the test suite's conftest. Where this process interprets, the
    interpreter's repeated patching goes (``sampling_harness.run.interpreter_calls``)."""
    if not torch.cuda.is_available():
        (os.environ if env is None else env).setdefault("TRITON_INTERPRET", "1")
    if env is None and os.environ.get("TRITON_INTERPRET") == "1":
        from sampling_harness.run.interpreter_calls import install

        install()      # the interpreter without its repeated patching (run/interpreter_calls.py)
