"""An output's exact conditions, judged together: one device synchronisation for all of them.

A validation states conditions as flags, a bool tensor over requests that is True where a
request breaks one, with a message for the first such request. Reading each flag back as it
is made costs a host synchronisation apiece; on a GPU that several worker processes share, a
synchronisation waits for the process's turn on the device, milliseconds a time, and a
validation of a dozen conditions then costs more than the kernel call it judges. ``Flags``
holds the flags and reads them back at once (``raise_first``): the failure raised is the
first condition broken in the order they were stated, the same as reading each in turn.

What a flag computes must be safe whatever an earlier flag finds: indices gathered with are
clamped into range (a kernel's token ids may be anything until the structural flags have
been read), so no gather raises a device-side assert on a wrong output.
"""

from __future__ import annotations

import torch

from sampling_harness.errors import KernelFailure


class Flags:
    """Conditions on a batch's requests, read back with one synchronisation."""

    def __init__(self):
        self.pending: list[tuple[torch.Tensor, object]] = []

    def add(self, flagged: torch.Tensor, what) -> None:
        """A condition broken by the requests where ``flagged`` (bool [B]) is True; ``what(b)``:
        the message for request b."""
        self.pending.append((flagged, what))

    def any(self, flagged: torch.Tensor) -> int:
        """A question read back with the flags (``raise_first``'s list, at its index)."""
        self.pending.append((flagged, None))
        return len(self.pending) - 1

    def raise_first(self) -> list[bool]:
        """Raise ``KernelFailure`` for the first condition broken, naming its first request
        and how many broke it; else the answers of ``any``, by index (all flags' answers)."""
        if not self.pending:
            return []
        device = self.pending[0][0].device
        hits = torch.stack([flagged.any().to(device) for flagged, _ in self.pending]).tolist()
        for (flagged, what), hit in zip(self.pending, hits, strict=True):
            if hit and what is not None:
                raise _failure(flagged, what)
        self.pending = []
        return hits


def _failure(flagged: torch.Tensor, what) -> KernelFailure:
    first = int(flagged.nonzero()[0, 0])
    return KernelFailure(f"request {first}: {what(first)} ({int(flagged.sum())} of "
                         f"{flagged.numel()} requests)")


def fail_first(flagged: torch.Tensor, what) -> None:
    """One condition read back at once (a synchronisation): ``KernelFailure`` for its first
    flagged request, as ``Flags.raise_first`` words it; for a validation whose next step
    needs this one's answer."""
    if bool(flagged.any()):
        raise _failure(flagged, what)
