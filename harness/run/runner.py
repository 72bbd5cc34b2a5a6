"""Calling a kernel under test: fresh inputs, a poisoned allocator, a timeout, validation.

Each call gets its own copy of the inputs, inside guard bands (``sampling_harness.run.guard``: a
write past an input's ends, or into an input the contract keeps read-only, fails the call),
runs in a daemon thread (``sampling_harness.run.call_thread``, kept between calls) so that a
hang becomes a failed check instead of a stuck run, and
returns only after the device has finished (asynchronous errors land in the call that
caused them). Before each call, memory the allocator will hand out next is filled with a
poison byte, so an output slot the kernel forgets to write reads back as garbage, never as
a plausible id or placeholder. The family says how to call the kernel and how to validate
its output exactly; everything else here is shared by every family.

Poison bytes are 0x7F and 0xA5: as int64 / int32 they are neither -1 (a placeholder) nor any
token id; as float32 they are 3.4e38 and -2.9e-16. ``call_twice`` calls the same inputs and
seed under both, after poisoning every free block of the CUDA caching allocator (its small
and large pools both), and demands identical outputs: an unwritten slot differs for certain.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from sampling_harness.errors import KernelFailure, KernelFault
from sampling_harness.families import FAMILIES, Family
from sampling_harness.families.registry import Kernel
from sampling_harness.run import faults
from sampling_harness.run.call_thread import call_in_thread
from sampling_harness.run.guard import check_guards, guarded_copy
from sampling_harness.run.isolation import CapturedStdout, TorchState
from sampling_harness.scale.memory import call_bytes, format_bytes
from sampling_harness.seeds import described

POISONS = (0x7F, 0xA5)             # byte patterns of the two poisoned calls of ``call_twice``
CUDA_LARGE_POISON = 64 << 20       # a large-pool block (outputs above 1 MB come from here)
CUDA_SMALL_POISON = 1 << 20        # small-pool blocks of the largest small size, two per segment
CUDA_FILL_ROUNDS = 64              # rounds of filling the caching allocator's free blocks
# optional observers of every validated call, observer(runner, inputs, seed, output), in
# the order added; none by default (``sampling-harness mutate`` records and compares
# calls through it: harness/mutate/recorder.py)
CALL_OBSERVERS: list = []


def _poison_free_cuda_blocks(device: torch.device, byte: int) -> None:
    """Fill every free block the CUDA caching allocator holds with ``byte``, then add a
    fresh poisoned small-pool segment and a 64 MB large-pool block, and free them all: the
    next allocations of any size, from either pool, come from poisoned memory.

    Free blocks are found in the allocator's snapshot and taken by allocating their size
    (best fit hands back that very block); small-pool blocks are taken 1 MB at most (larger
    requests go to the large pool).
    """
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    index = device.index if device.index is not None else torch.cuda.current_device()
    held: list[torch.Tensor] = []
    remaining = None
    for _ in range(CUDA_FILL_ROUNDS):
        free = [(segment["segment_type"], block["size"])
                for segment in torch.cuda.memory_snapshot() if segment["device"] == index
                for block in segment["blocks"] if block["state"] == "inactive"]
        takeable = [(kind, size) for kind, size in free
                    if kind == "small" or size > CUDA_SMALL_POISON]
        if not takeable or len(takeable) == remaining:
            break
        remaining = len(takeable)
        for kind, size in takeable:
            size = min(size, CUDA_SMALL_POISON) if kind == "small" else size
            held.append(torch.full((size,), byte, dtype=torch.uint8, device=device))
    held += [torch.full((CUDA_SMALL_POISON,), byte, dtype=torch.uint8, device=device)
             for _ in range(2)]
    held.append(torch.full((CUDA_LARGE_POISON,), byte, dtype=torch.uint8, device=device))
    torch.cuda.synchronize(device)
    del held


def poison_allocator(device: torch.device, byte: int, output_bytes: int,
                     thorough: bool = False) -> None:
    """Leave ``byte`` where the allocator will hand out the kernel's next buffers.

    CUDA: a poisoned 64 MB large-pool block and output-sized small blocks; ``thorough``:
    every free block of the caching allocator too (``_poison_free_cuda_blocks``). CPU:
    output-sized blocks (glibc reuses freed chunks of a size, not for certain).
    """
    if device.type == "cuda" and thorough:
        _poison_free_cuda_blocks(device, byte)
        return
    if device.type == "cuda":
        block = torch.full((CUDA_LARGE_POISON,), byte, dtype=torch.uint8, device=device)
        del block
    sizes = [max(1, output_bytes)] * 4 + [2 * max(1, output_bytes)]
    blocks = [torch.full((size,), byte, dtype=torch.uint8, device=device) for size in sizes]
    del blocks


class _FilledEmpty:
    """On a CPU, where malloc's reuse of poisoned chunks is not certain: torch's own fill
    of uninitialised memory (NaN for floats, the largest value for integers), which
    ``torch.empty`` applies while deterministic algorithms are on (warnings only)."""

    def __init__(self, active: bool):
        self.active = active
        self.saved = None

    def __enter__(self):
        if self.active:
            self.saved = (torch.are_deterministic_algorithms_enabled(),
                          torch.is_deterministic_algorithms_warn_only_enabled(),
                          torch.utils.deterministic.fill_uninitialized_memory)
            torch.use_deterministic_algorithms(True, warn_only=True)
            torch.utils.deterministic.fill_uninitialized_memory = True

    def __exit__(self, *exc):
        self.restore()

    def restore(self) -> None:
        """Put torch's settings back (also called when the kernel's thread hangs)."""
        if self.saved is not None:
            enabled, warn_only, fill = self.saved
            torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
            torch.utils.deterministic.fill_uninitialized_memory = fill
            self.saved = None


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _poison_hint(output: object, byte: int) -> str:
    """' (...)' when the output holds the poison pattern: a slot the kernel never wrote."""
    if not isinstance(output, torch.Tensor) or output.dtype.is_floating_point:
        return ""
    width = output.element_size()
    pattern = int.from_bytes(bytes([byte]) * width, "little", signed=True)
    extreme = torch.iinfo(output.dtype).max if output.dtype.is_signed else None
    hits = (output == pattern) | (output == extreme) if extreme is not None \
        else output == pattern
    count = int(hits.sum())
    return (f" ({count} slots hold the allocator poison or torch's fill of uninitialised "
            "memory: output the kernel never wrote)") if count else ""


class OutOfMemoryFailure(KernelFailure):
    """The kernel raised torch's OutOfMemoryError (on a GPU that other checks share, its
    check runs again alone: ``sampling_harness.scale.gpu_share``)."""


class CallTooLarge(KernelFailure):
    """A call whose inputs and output alone exceed the memory the run was granted on its
    device (``--memory-budget`` times the checks sharing it): it cannot fit, so its check
    fails with the bytes."""


@dataclass
class Runner:
    """Calls one kernel of its family and keeps count of what it cost."""

    kernel: Kernel
    device: torch.device
    timeout: float
    memory_limit: int | None = None    # bytes a call's inputs and output may take
    calls: int = 0
    draws: int = 0
    seconds: float = 0.0
    guard_seconds: float = 0.0     # building and checking guard bands (harness/run/guard.py)
    on_draws: object = None        # called with each valid call's draws (a progress bar)
    side_effects: dict = field(default_factory=dict)   # what calls changed -> how many times

    @property
    def family(self) -> Family:
        return FAMILIES[self.kernel.family]

    def call(self, inputs: dict, seed, poison: int = POISONS[0],
             thorough: bool = False):
        """One validated call of the kernel on a fresh copy of ``inputs`` (the contract's
        arguments but the seed, already on the device); ``seed`` an int, or per-request
        seeds (an int64 tensor, copied for the call); returns the family's validated
        output. Every misbehaviour raises ``KernelFailure``; running out of memory raises
        ``OutOfMemoryFailure`` (on a GPU that other checks share, the check is then run again
        alone on it: ``sampling_harness.scale.gpu_share``)."""
        family = self.family
        self._fits(inputs, seed)
        started = time.perf_counter()
        fresh, guards = guarded_copy(inputs)
        call_seed = seed.clone() if isinstance(seed, torch.Tensor) else seed
        self.guard_seconds += time.perf_counter() - started
        poison_allocator(self.device, poison, family.output_bytes(inputs), thorough)
        outcome: dict[str, object] = {}
        fill = _FilledEmpty(thorough and self.device.type == "cpu" and poison == POISONS[0])

        def call() -> None:
            try:
                with fill:
                    outcome["output"] = family.call(self.kernel.fn, fresh, call_seed)
                    _synchronize(self.device)
            except BaseException as exc:  # reported, never swallowed
                outcome["error"] = exc

        started = time.perf_counter()
        before = TorchState.capture()
        note = f"{_shape_note(inputs)}, {described(seed)}"
        faults.calling(note, self.timeout)      # a worker's record, should the call fault
        with CapturedStdout() as printed:
            finished = call_in_thread(call, self.device, self.timeout)
        self.seconds += time.perf_counter() - started
        if not finished:
            fill.restore()
            faults.spoil("a kernel call still running", self.kernel.name,
                         cuda=self.device.type == "cuda")
            raise KernelFault(f"did not return within {self.timeout:g} s ({note})")
        faults.returned()
        exc = outcome.get("error")
        if exc is not None and self.device.type == "cuda" and faults.sticky_cuda_error(exc):
            faults.spoil("a sticky CUDA error", self.kernel.name)   # no CUDA call works now
            raise KernelFault(f"{_first_line(exc)[:200]} ({note})", memcheck=True)
        self._isolate(before, printed)
        if exc is not None:
            failure = OutOfMemoryFailure if isinstance(exc, torch.OutOfMemoryError) \
                else KernelFailure
            raise failure(f"raised {type(exc).__name__}: {_first_line(exc)}"[:300])
        started = time.perf_counter()
        check_guards(guards, fresh, inputs, family.writable)
        self.guard_seconds += time.perf_counter() - started
        try:
            validated = family.validate(outcome["output"], inputs)
        except KernelFailure as exc:
            raise KernelFailure(f"{exc}{_poison_hint(outcome['output'], poison)}") from None
        self.calls += 1
        draws = family.draws(inputs)
        self.draws += draws
        if self.on_draws is not None:
            self.on_draws(draws)
        for observe in CALL_OBSERVERS:
            observe(self, inputs, seed, validated)
        return validated

    def _fits(self, inputs: dict, seed) -> None:
        """Raise ``CallTooLarge`` when the call's inputs and output exceed the limit."""
        if self.memory_limit is None:
            return
        needed = call_bytes(inputs.values()) + self.family.output_bytes(inputs)
        if needed > self.memory_limit:
            raise CallTooLarge(
                f"call does not fit: its inputs and output take {format_bytes(needed)}, more "
                f"than the {format_bytes(self.memory_limit)} of memory the run was granted "
                f"on its device (--memory-budget times the checks sharing it; "
                f"{_shape_note(inputs)}, {described(seed)})")

    def restart(self) -> None:
        """Forget the calls counted so far (a check run again from its start)."""
        self.calls, self.draws, self.seconds, self.guard_seconds = 0, 0, 0.0, 0.0

    def _isolate(self, before: TorchState, printed: CapturedStdout) -> None:
        """Put back torch's global state as it was before the call; note what changed."""
        changed = before.changes(TorchState.capture())
        if changed:
            before.restore()
        if printed.written:
            changed.append(f"printed {printed.written} characters to stdout")
        for change in changed:
            self.side_effects[change] = self.side_effects.get(change, 0) + 1

    def call_twice(self, inputs: dict, seed: int):
        """Call twice with the same inputs and seed, under the two poison patterns with every
        free allocator block poisoned; demand identical outputs. A slot the kernel leaves
        unwritten differs between the calls for certain; so does any nondeterminism."""
        first = self.call(inputs, seed, POISONS[0], thorough=True)
        second = self.call(inputs, seed, POISONS[1], thorough=True)
        for a, b in zip(_tensors(first), _tensors(second), strict=True):
            _demand_equal(a, b, seed, inputs)
        return first


def _tensors(output) -> list[torch.Tensor]:
    """The tensors of a validated output (one tensor, or a tuple with None for absent parts)."""
    parts = output if isinstance(output, tuple) else (output,)
    return [part for part in parts if part is not None]


def _demand_equal(first: torch.Tensor, second: torch.Tensor, seed: int, inputs: dict) -> None:
    """Identical outputs of the two poisoned calls (NaN equal to NaN), else KernelFailure."""
    if not torch.equal(first, second) and not (
            first.dtype.is_floating_point and torch.equal(first.isnan(), second.isnan())
            and torch.equal(first.nan_to_num(0.0), second.nan_to_num(0.0))):
        differ = (first != second) & ~(first.isnan() & second.isnan()) \
            if first.dtype.is_floating_point else first != second
        where = tuple(int(i) for i in differ.nonzero()[0])
        raise KernelFailure(
            f"same inputs and seed gave different outputs under poison bytes "
            f"0x{POISONS[0]:02X} and 0x{POISONS[1]:02X}: {int(differ.sum())} of "
            f"{first.numel()} values differ, first at {where} ({first[where].item()} vs "
            f"{second[where].item()}): an unwritten output slot, or a nondeterministic "
            f"kernel ({described(seed)}, {_shape_note(inputs)})")


def _shape_note(inputs: dict) -> str:
    """'probs [4, 7], ...': the shapes of a call's tensor inputs, for messages."""
    parts = [f"{name} {list(value.shape)}" for name, value in inputs.items()
             if isinstance(value, torch.Tensor)]
    return ", ".join(parts) or "no tensor inputs"
