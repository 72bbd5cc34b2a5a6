"""Guard bands: every tensor a kernel is handed lies inside a larger buffer, between canaries.

A kernel with a wrong mask writes past the end of a row or a tensor, and its output can still
look right: the damage lands in a neighbour's memory. So each tensor input is copied into the
middle of a buffer whose two bands, before and after it, hold a canary byte; after the call,
a band that no longer holds only canaries names the tensor, the side and the first byte
offset touched. Inputs the contract does not let the kernel overwrite (every input but the
family's ``writable`` ones) are also compared, bit for bit, with the harness's own copy.

A band is one row of the tensor (its last dimension), rounded up to 512 bytes, between 512
bytes and 4 MiB: a store one element or one row past either end lands in it, and the data
keeps the 512-byte alignment of a fresh allocation (Triton specialises on 16-byte alignment).
A write that skips further than a band, or a write of the canary byte itself, is not seen
here; ``--sanitize memcheck`` sees the first (and writes outside any input).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from sampling_harness.errors import KernelFailure

CANARY = 0xC5          # the band's byte: as float32 -6.3e3, as int32 or int64 negative
ALIGN = 512
MAX_BAND = 4 << 20


def band_bytes(tensor: torch.Tensor) -> int:
    """Bytes of each guard band around ``tensor``: one row, rounded up to ``ALIGN``."""
    row = tensor.shape[-1] * tensor.element_size() if tensor.dim() else tensor.element_size()
    return min(MAX_BAND, max(ALIGN, -(-row // ALIGN) * ALIGN))


@dataclass
class Guarded:
    """One input's copy and the buffer around it."""

    name: str
    buffer: torch.Tensor      # uint8: band | tensor bytes | band
    band: int
    nbytes: int
    tensor: torch.Tensor      # the contiguous view handed to the kernel


def guard(name: str, value: torch.Tensor) -> Guarded:
    """A copy of ``value`` inside a canary-banded buffer on the same device."""
    band, nbytes = band_bytes(value), value.numel() * value.element_size()
    buffer = torch.empty(band + nbytes + band, dtype=torch.uint8, device=value.device)
    buffer[:band].fill_(CANARY)
    buffer[band + nbytes:].fill_(CANARY)
    tensor = buffer[band:band + nbytes].view(value.dtype).view(value.shape)
    tensor.copy_(value)
    return Guarded(name, buffer, band, nbytes, tensor)


IMMUTABLE = frozenset({int, float, bool, str})


class HeldByList:
    """``derive(items)``, held for the last long list given and returned again while the list
    given is that one and equal to a copy of it (about 3 ns an item: its items are the very
    objects), where deriving costs more (a type scan about 15 ns an item, numpy's conversion
    about 40 ns): a check that streams calls of one batch of 2^25 requests hands the same
    list of draft counts to the guard and the validation at every call."""

    LONG = 2**16

    def __init__(self, derive):
        self.derive = derive
        self.source, self.copy, self.value = None, None, None

    def __call__(self, items):
        if items is self.source and items == self.copy:
            return self.value
        value = self.derive(items)
        if isinstance(items, list) and len(items) >= self.LONG:
            self.source, self.copy, self.value = items, list(items), value
        return value


_flat = HeldByList(lambda items: set(map(type, items)) <= IMMUTABLE)


def fresh_list(value: list) -> list:
    """A copy the kernel may change without touching ``value``: a flat list of immutable
    items (a batch's draft counts) shallow-copied in C, anything else (token ids, lists of
    lists) deep-copied (deepcopy ~1 us an item)."""
    return list(value) if _flat(value) else copy.deepcopy(value)


def guarded_copy(inputs: dict) -> tuple[dict, list[Guarded]]:
    """The inputs for one call: tensors guarded, lists copied, the rest as they are."""
    fresh, guards = {}, []
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor):
            guards.append(guard(name, value))
            fresh[name] = guards[-1].tensor
        elif isinstance(value, list):
            fresh[name] = fresh_list(value)
        else:
            fresh[name] = value
    return fresh, guards


def _bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The bytes of ``tensor`` (an empty one may carry zero strides, as numpy gives it)."""
    if tensor.numel() == 0:
        return torch.empty(0, dtype=torch.uint8, device=tensor.device)
    return tensor.reshape(-1).view(torch.uint8)


def _words(first: torch.Tensor, second: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The bytes of two same-sized tensors as the widest integer words both allow: a
    bit-for-bit comparison reads them at full width (8x fewer elements than bytes)."""
    a, b = _bytes(first), _bytes(second)
    for word in (torch.int64, torch.int32, torch.int16):
        size = word.itemsize
        if a.numel() % size == 0 and all(x.storage_offset() % size == 0 for x in (a, b)):
            return a.view(word), b.view(word)
    return a, b


def check_guards(guards: list[Guarded], fresh: dict, inputs: dict,
                 writable: tuple[str, ...]) -> None:
    """Raise ``KernelFailure`` if a band lost a canary, or a read-only input changed (lists
    too: a proposer that appends to the requests' token ids corrupts the engine's state).

    One device sync for all the tensors of a call; the slow path (where, how many) runs
    only on a failure.
    """
    for name, value in fresh.items():
        if isinstance(value, list) and name not in writable and value != inputs[name]:
            raise KernelFailure(f"changed read-only input {name} (a list) in place")
    if not guards:
        return
    flags = []
    for g in guards:
        flags.append((g.buffer[:g.band] != CANARY).any())
        flags.append((g.buffer[g.band + g.nbytes:] != CANARY).any())
        flags.append(torch.zeros((), dtype=torch.bool, device=g.buffer.device)
                     if g.name in writable
                     else torch.ne(*_words(g.tensor, inputs[g.name])).any())
    touched = torch.stack([f.to(guards[0].buffer.device) for f in flags]).tolist()
    for index, g in enumerate(guards):
        before, after, changed = touched[3 * index:3 * index + 3]
        if before:
            offsets = (g.buffer[:g.band] != CANARY).nonzero().flatten()
            first = g.band - int(offsets.min())
            raise KernelFailure(
                f"wrote outside input {g.name}: {offsets.numel()} bytes of the guard band "
                f"before it changed, the nearest {first} bytes before its start")
        if after:
            offsets = (g.buffer[g.band + g.nbytes:] != CANARY).nonzero().flatten()
            raise KernelFailure(
                f"wrote outside input {g.name}: {offsets.numel()} bytes of the guard band "
                f"after it changed, the first at byte {int(offsets.min())} past its end")
        if changed:
            allowed = (f"only {', '.join(writable)} may be overwritten" if writable
                       else "every input is read-only")
            raise KernelFailure(f"changed read-only input {g.name}: "
                                f"{_mismatch(g.tensor, inputs[g.name])} (by the contract "
                                f"{allowed})")


def _mismatch(new: torch.Tensor, old: torch.Tensor) -> str:
    """'3 of 1024 values differ, the first at (0, 5): 0.25 became 0.5'."""
    differ = _bytes(new).view(-1, new.element_size()) != _bytes(old).view(-1, new.element_size())
    positions = differ.any(dim=1).view(new.shape)
    where = tuple(int(i) for i in positions.nonzero()[0])
    return (f"{int(positions.sum())} of {new.numel()} values differ, the first at {where}: "
            f"{old[where].item()} became {new[where].item()}")
