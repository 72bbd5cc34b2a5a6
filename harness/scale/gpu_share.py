"""GPU memory admission: the checks that share one GPU take turns with its memory.

Several pytest-xdist workers (and any other harness run on the same host) run checks on one
GPU side by side. Most checks fit beside each other; a few hold tens of GB at their peak (a
float64 reference over V = 151936, a sort of a standard batch), and two such peaks at once
run the card out of memory, which once surfaced as a harness error of whichever check asked
last. Admission turns that into a rule instead of luck:

* every check runs under the GPU's *shared* lock (many at once);
* a check whose work runs out of memory there is run again under the *exclusive* lock: it
  waits until the checks running beside it have ended, starts when it is alone on the GPU,
  and holds new checks back until it ends. Checks are seeded, so the second run draws the
  same batches and reaches the same verdict a run alone would have reached;
* a kernel call that runs out of memory even alone fails its check with the bytes it asked
  for (``Runner``): the kernel does not fit this GPU at this batch.

The locks are ``flock`` locks on two files named after the GPU (its UUID) in the system's
temporary directory, so they hold across processes and runs, and the kernel frees them when
a process dies. A waiting exclusive request goes first (writer preference): a check takes
the *turnstile* for an instant before its shared lock, and the exclusive request holds the
turnstile while it waits, so no stream of new checks can starve it.

Each check's calls are sized to its share of the memory (``scale.memory``: the free memory at
the start split among the workers, resolved once per run and written into every reproduce
command), so a check's calls, its statistic and p-value, stay the same whatever ran beside it;
admission only decides when it runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

DIRECTORY = "sampling-harness-gpu"


class GpuShare:
    """The shared and exclusive locks of one GPU (``name``: a file-name-safe identity)."""

    def __init__(self, name: str, directory: Path | None = None):
        folder = Path(directory or Path(tempfile.gettempdir()) / DIRECTORY)
        folder.mkdir(parents=True, exist_ok=True)
        self.main = folder / f"{name}.lock"
        self.turnstile = folder / f"{name}.turnstile"
        self.alone_runs = 0            # checks this process re-ran alone

    @contextlib.contextmanager
    def _locked(self, path: Path, mode: int) -> Iterator[None]:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, mode)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Run beside the other checks of this GPU (after any exclusive request waiting)."""
        with self._locked(self.turnstile, fcntl.LOCK_EX):
            pass
        with self._locked(self.main, fcntl.LOCK_SH):
            yield

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """Run alone on this GPU: wait for the checks running now, hold new ones back."""
        with self._locked(self.turnstile, fcntl.LOCK_EX), \
                self._locked(self.main, fcntl.LOCK_EX):
            self.alone_runs += 1
            yield


def gpu_name(device) -> str:
    """A file-name-safe identity of a CUDA device that every process agrees on: its UUID
    (CUDA_VISIBLE_DEVICES renumbers devices per process), else its PCI bus id."""
    import torch

    properties = torch.cuda.get_device_properties(device)
    identity = str(getattr(properties, "uuid", "") or "")
    if not identity:
        identity = f"pci-{properties.pci_domain_id}-{properties.pci_bus_id}-" \
                   f"{properties.pci_device_id}"
    return "gpu-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in identity)


_SHARES: dict[str, GpuShare] = {}


def for_device(device) -> GpuShare | None:
    """The share of ``device``'s GPU (one per process and GPU), or None for a CPU."""
    if getattr(device, "type", None) != "cuda":
        return None
    name = gpu_name(device)
    if name not in _SHARES:
        _SHARES[name] = GpuShare(name)
    return _SHARES[name]


def leaves(exc: BaseException) -> list[BaseException]:
    """The errors ``exc`` stands for: itself, or the leaves of an exception group (a
    Hypothesis ``FlakyFailure`` wraps the error its test raised), first one first."""
    inner = getattr(exc, "exceptions", None)
    if not inner:
        return [exc]
    return [leaf for sub in inner for leaf in leaves(sub)]


def caused_by(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    """Whether ``exc`` is, or wraps (an exception group, a cause), an error of ``kinds``."""
    seen, todo = set(), [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kinds):
            return True
        todo += [*getattr(current, "exceptions", ()), current.__cause__, current.__context__]
    return False
