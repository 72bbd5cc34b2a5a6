"""Device facts and scratch shared by the Triton kernels that split a row across programs
and merge the splits in the last of them, through a ticket (triton-exact,
triton-logprobs).

The scratch is held per (kernel, device, stream), so only calls in stream order share it.
Tickets are zeros, as every call leaves them (the merging program resets its ticket); the
partials need no initial value. Call such a kernel once before capturing it in a CUDA
graph, so that its scratch exists outside the graph's memory pool.
"""

from __future__ import annotations

import functools

import torch

_HELD: dict = {}


def split_scratch(kernel: str, device: torch.device, tickets: int, partials: int,
                  dtypes: tuple[torch.dtype, ...]) -> tuple[torch.Tensor, ...]:
    """(tickets int32, one buffer per dtype): at least ``tickets`` tickets and ``partials``
    elements per buffer, grown (never shrunk) on demand."""
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = kernel, device, stream
    held = _HELD.get(key)
    if held is None or held[0].numel() < tickets or held[1].numel() < partials:
        held = (torch.zeros(max(tickets, 1024), dtype=torch.int32, device=device),
                *(torch.empty(max(partials, 1 << 16), dtype=dtype, device=device)
                  for dtype in dtypes))
        _HELD[key] = held
    return held


@functools.cache
def multiprocessors(device: torch.device) -> int:
    """The streaming multiprocessors of a CUDA device."""
    return torch.cuda.get_device_properties(device).multi_processor_count
