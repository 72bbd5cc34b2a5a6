"""Keeping a kernel's side effects out of the run: torch's global state and stdout.

A kernel under test may print, or change process-wide torch state that later checks (and the
harness's own references) rely on: the default dtype, the global random generators, the
deterministic-algorithms flags, grad mode. Around every call the runner snapshots that
state, restores the settings afterwards (the generators are only reported, see
``TorchState.restore``), and names what changed; prints go to a buffer (the run's
output and its reports stay readable), and their size is noted. Grad mode is per thread in
torch, and the kernel runs in a thread of its own, so a change there cannot leak; it is
still compared, on the calling thread.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass

import torch


@dataclass
class TorchState:
    """The process-wide torch settings a kernel could change."""

    default_dtype: torch.dtype
    cpu_rng: torch.Tensor
    cuda_rng: list[torch.Tensor]
    deterministic: tuple[bool, bool]
    grad: bool

    @classmethod
    def capture(cls) -> TorchState:
        cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        return cls(default_dtype=torch.get_default_dtype(),
                   cpu_rng=torch.random.get_rng_state(),
                   cuda_rng=torch.cuda.get_rng_state_all() if cuda else [],
                   deterministic=(torch.are_deterministic_algorithms_enabled(),
                                  torch.is_deterministic_algorithms_warn_only_enabled()),
                   grad=torch.is_grad_enabled())

    def changes(self, now: TorchState) -> list[str]:
        """What the kernel did, in words, judging by what differs in ``now``."""
        found = []
        if now.default_dtype != self.default_dtype:
            found.append(f"changed the default dtype from {self.default_dtype} to "
                         f"{now.default_dtype}")
        if not torch.equal(now.cpu_rng, self.cpu_rng):
            found.append("used or reseeded torch's global CPU generator")
        if len(now.cuda_rng) == len(self.cuda_rng) and any(
                not torch.equal(a, b) for a, b in zip(now.cuda_rng, self.cuda_rng, strict=True)):
            found.append("used or reseeded torch's global CUDA generator")
        if now.deterministic != self.deterministic:
            found.append(f"changed the deterministic-algorithms flags from {self.deterministic} to "
                         f"{now.deterministic}")
        if now.grad != self.grad:
            found.append(f"changed grad mode from {self.grad} to {now.grad}")
        return found

    def restore(self) -> None:
        """Put the settings back. The global generators are left as the kernel left them:
        winding them back would make a kernel that ignores its seed (and draws from them)
        repeat itself, and hide the very nondeterminism the validity checks look for."""
        torch.set_default_dtype(self.default_dtype)
        enabled, warn_only = self.deterministic
        if (torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled()) != self.deterministic:
            # only where changed: the setter imports torch._inductor (seconds, per process)
            torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
        torch.set_grad_enabled(self.grad)


class CapturedStdout:
    """``sys.stdout`` swapped for a buffer while a kernel runs (set and restored by the
    calling thread, so a kernel that hangs leaves the run's stdout as it was)."""

    def __init__(self):
        self.buffer = io.StringIO()
        self.saved = None

    def __enter__(self) -> CapturedStdout:
        self.saved, sys.stdout = sys.stdout, self.buffer
        return self

    def __exit__(self, *exc) -> None:
        sys.stdout = self.saved

    @property
    def written(self) -> int:
        return len(self.buffer.getvalue())
