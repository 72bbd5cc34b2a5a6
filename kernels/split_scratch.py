"""Device facts and scratch shared by the Triton kernels that split a row across programs
and merge the splits in the last of them, through a ticket (triton-exact,
triton-logprobs), or that hold scratch between calls (triton-sample-logits); and the
host-side launch arithmetic of a wrapper's every call, in plain ints.

The scratch is held per (kernel, device, stream), so only calls in stream order share it.
Tickets are zeros, as every call leaves them (the merging program resets its ticket); the
partials need no initial value. Call such a kernel once before capturing it in a CUDA
graph, so that its scratch exists outside the graph's memory pool.

A larger call grows the scratch by at least doubling it, and the buffers it replaces are
kept for good (``_RETIRED``): a graph captured on them reads and writes them at every
replay, so freeing them would hand their memory to other tensors while the graph still
uses it (an engine captures a graph per batch size, in an order of its own). Doubling
bounds what is kept to about twice the largest scratch of each (kernel, device, stream).
"""

from __future__ import annotations

import functools

import torch

_HELD: dict = {}
_RETIRED: list = []      # scratch replaced by a larger one: captured graphs may still use it


def split_scratch(kernel: str, device: torch.device, tickets: int, partials: int,
                  dtypes: tuple[torch.dtype, ...]) -> tuple[torch.Tensor, ...]:
    """(tickets int32, one buffer per dtype): at least ``tickets`` tickets and ``partials``
    elements per buffer, grown on demand to at least twice the held size, never shrunk;
    the replaced buffers are kept (module docstring)."""
    stream = stream_handle(device)
    key = kernel, device, stream
    held = _HELD.get(key)
    if held is None or held[0].numel() < tickets or held[1].numel() < partials:
        sizes = (1024, 1 << 16) if held is None else (held[0].numel(), held[1].numel())
        if held is not None:
            _RETIRED.append(held)
        held = (torch.zeros(grown(sizes[0], tickets), dtype=torch.int32, device=device),
                *(torch.empty(grown(sizes[1], partials), dtype=dtype, device=device)
                  for dtype in dtypes))
        _HELD[key] = held
    return held


def grown(size: int, need: int) -> int:
    """A held buffer's next size: ``size`` while it holds ``need``, else at least twice it."""
    return size if size >= need else max(need, 2 * size)


def stream_handle(device: torch.device) -> int:
    """The raw handle of the current stream of ``device`` (0 on a CPU): what Triton's own
    launcher asks torch for, about a microsecond, where ``torch.cuda.current_stream``
    builds a Stream object for several."""
    if device.type != "cuda":
        return 0
    index = device.index if device.index is not None else torch.cuda.current_device()
    return torch._C._cuda_getCurrentRawStream(index)


def next_power_of_2(n: int) -> int:
    """The least power of two >= n (1 for n <= 1), in plain ints: the launch wrappers call
    it and ``cdiv`` on every call, where ``triton.next_power_of_2`` and ``triton.cdiv``
    (constexpr functions in Triton 3.6) cost microseconds of host time each."""
    return 1 << max(n - 1, 0).bit_length()


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for ints, b > 0."""
    return -(-a // b)


@functools.cache
def dependent_launch(device: torch.device) -> bool:
    """Whether ``device`` takes programmatic dependent launch (PDL): a GPU of compute
    capability 9 and up (not the interpreter, whatever the launch asks)."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9


@functools.cache
def multiprocessors(device: torch.device) -> int:
    """The streaming multiprocessors of a CUDA device."""
    return torch.cuda.get_device_properties(device).multi_processor_count
