"""Calling a kernel under test: fresh inputs, a poisoned allocator, a timeout, validation.

Each call gets its own copy of the inputs (the contract lets the kernel overwrite them),
runs in a daemon thread so that a hang becomes a failed check instead of a stuck run,
and returns only after the device has finished (asynchronous errors land in the call that
caused them). Before each call the allocator is handed a block filled with a poison value
and freed, so an output the kernel forgets to write reads back as garbage, not as zeros.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

from harness.contracts import validate_ids
from harness.errors import HarnessError, KernelFailure
from harness.loader import Kernel

CUDA_POISON_BYTES = 64 << 20  # bigger than any block the caching allocator reuses for ids


def derive_seed(*parts: object) -> int:
    """A 31-bit seed that is a pure function of ``parts`` (stable across runs and machines)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF


def seed_stream(seed: int):
    """Independent-looking 31-bit call seeds, reproducible from one check seed."""
    rng = np.random.default_rng(seed)
    while True:
        yield int(rng.integers(0, 2**31 - 1))


def use_triton_interpreter_without_gpu() -> None:
    """Triton kernels run on a CPU only through its interpreter, which must be chosen before
    triton is first imported: choose it when torch sees no GPU (an explicit setting wins)."""
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise HarnessError("--device cuda asked for, but torch sees no CUDA device")
    return torch.device(device)


def poison_allocator(device: torch.device, batch: int) -> None:
    """Leave poison (all bits set: -1 as an integer, NaN as a float) where the allocator will
    hand out the kernel's next buffers: a big block for the CUDA caching allocator, blocks
    the size of a plausible output for the CPU allocator."""
    if device.type == "cuda":
        block = torch.full((CUDA_POISON_BYTES // 8,), -1, dtype=torch.int64, device=device)
        del block
    for size in (batch, 2 * batch):
        block = torch.full((size,), -1, dtype=torch.int64, device=device)
        del block


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Runner:
    """Calls one kernel of family ``sample`` and keeps count of what it cost."""

    kernel: Kernel
    device: torch.device
    timeout: float
    calls: int = 0
    draws: int = 0
    seconds: float = 0.0

    def sample(self, probs: torch.Tensor, seed: int) -> torch.Tensor:
        """One validated call: int64 ids of shape [B] on the device."""
        fresh = probs.clone()
        poison_allocator(self.device, probs.shape[0])
        outcome: dict[str, object] = {}

        def call() -> None:
            try:
                outcome["ids"] = self.kernel.fn(fresh, seed)
                _synchronize(self.device)
            except BaseException as exc:  # reported, never swallowed
                outcome["error"] = exc

        started = time.perf_counter()
        thread = threading.Thread(target=call, name=f"kernel-{self.kernel.name}", daemon=True)
        thread.start()
        thread.join(self.timeout)
        self.seconds += time.perf_counter() - started
        if thread.is_alive():
            raise KernelFailure(f"call did not return within {self.timeout:g} s "
                                f"(B={probs.shape[0]}, V={probs.shape[1]}, seed={seed})")
        if "error" in outcome:
            exc = outcome["error"]
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise KernelFailure(f"raised {type(exc).__name__}: {first}"[:300])
        ids = validate_ids(outcome["ids"], probs)
        self.calls += 1
        self.draws += probs.numel()
        return ids
