"""The host side of triton-rejection: a call's request layout, validated, held and put on
the device without synchronising.

num_draft_tokens (a host list) travels to the device as a (starts, counts) layout [2, B]
through pinned memory, with no synchronisation. The host facts of the latest REQUESTS_HELD
distinct counts are held (an eager call with the counts of an earlier one does no numpy
work), and the latest LAYOUTS_HELD device layouts of up to HELD_REQUESTS requests stay on
the device, so a call inside a CUDA graph capture reuses the one an eager call with the
same counts made before it (torch.cuda.graph synchronises before capturing), and the graph
keeps it for good. A held layout made on another stream is waited for on this one (an
event).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

from sampling_harness.kernels.split_scratch import stream_handle

POSITION_BITS = 20                   # positions per request in the acceptance counters
LAYOUTS_HELD, HELD_REQUESTS = 16, 4096   # device layouts held for captures (module docstring)
REQUESTS_HELD = 64                   # host facts of recent num_draft_tokens (requests_of)
_LAYOUTS: OrderedDict = OrderedDict()    # (device, counts) -> (layout, event, stream): latest
_CAPTURED: dict = {}                     # layouts read by captured graphs: held for good
_REQUESTS: dict = {}                     # tuple(num_draft_tokens) -> Requests


@dataclass(frozen=True)
class Requests:
    """The host facts of one ``num_draft_tokens``: the counts (int64), B, T = sum, K = max,
    and the (starts, counts) layout [2, B] on the host. Held per counts (``requests_of``)."""

    counts: np.ndarray
    batch: int
    total: int
    width: int
    host: torch.Tensor


def requests_of(num_draft_tokens) -> tuple[tuple, Requests]:
    """(key, Requests) of ``num_draft_tokens``, validated (a one-line ValueError outside
    [0, 2^POSITION_BITS)) the first time and held (REQUESTS_HELD of them): numpy, since a
    Python loop over requests would bound a large batch by the host."""
    key = tuple(num_draft_tokens)
    held = _REQUESTS.get(key)
    if held is not None:
        return key, held
    counts = np.asarray(num_draft_tokens, dtype=np.int64).reshape(-1)
    outside = np.flatnonzero((counts < 0) | (counts >= 2**POSITION_BITS))
    if outside.size:
        raise ValueError(f"num_draft_tokens must lie in [0, 2^{POSITION_BITS}), got "
                         f"num_draft_tokens[{outside[0]}] = {counts[outside[0]]}")
    host = torch.from_numpy(np.stack([np.cumsum(counts) - counts, counts]))
    held = Requests(counts, counts.size, int(counts.sum()), int(counts.max(initial=0)), host)
    if len(_REQUESTS) >= REQUESTS_HELD:
        _REQUESTS.clear()
    _REQUESTS[key] = held
    return key, held


def check_inputs(requests: Requests, draft_token_ids, draft_probs, target_probs,
                 bonus_token_ids, greedy) -> None:
    """ValueError (one line) on a dtype or shape outside the contract."""
    batch, total = requests.batch, requests.total
    if target_probs.dtype != torch.float32 or target_probs.dim() != 2 \
            or target_probs.shape[0] != total:
        raise ValueError(f"target_probs must be float32 [T={total}, V], got "
                         f"{target_probs.dtype} {tuple(target_probs.shape)}")
    if draft_probs is not None and (draft_probs.dtype != torch.float32
                                    or draft_probs.shape != target_probs.shape):
        raise ValueError(f"draft_probs must be None or float32 {tuple(target_probs.shape)}, "
                         f"got {draft_probs.dtype} {tuple(draft_probs.shape)}")
    for name, tensor, dtype, size in (("draft_token_ids", draft_token_ids, torch.int64, total),
                                      ("bonus_token_ids", bonus_token_ids, torch.int64, batch),
                                      ("greedy", greedy, torch.bool, batch)):
        if tensor.dtype != dtype or tensor.shape != (size,):
            raise ValueError(f"{name} must be {dtype} [{size}], got {tensor.dtype} "
                             f"{tuple(tensor.shape)}")


def dense(x: torch.Tensor) -> torch.Tensor:
    """``x`` itself when contiguous (no dispatch), else a contiguous copy."""
    return x if x.is_contiguous() else x.contiguous()


def request_layout(key: tuple, requests: Requests, device: torch.device) -> torch.Tensor:
    """int64 [2, B]: each request's first draft row and its draft count, on ``device``, with
    no synchronisation (a pinned copy); held for captures (module docstring)."""
    if device.type != "cuda":
        return requests.host.to(device)
    key = (device, key) if requests.batch <= HELD_REQUESTS else None
    held = _CAPTURED.get(key) or _LAYOUTS.get(key)
    capturing = torch.cuda.is_current_stream_capturing()
    if held is not None:
        if capturing:
            _CAPTURED[key] = held            # the graph reads it on every replay
        else:
            if key in _LAYOUTS:
                _LAYOUTS.move_to_end(key)
            if stream_handle(device) != held[2]:
                torch.cuda.current_stream(device).wait_event(held[1])
        return held[0]
    if capturing:
        raise RuntimeError(
            f"triton-rejection: call it once outside the CUDA graph capture with these "
            f"num_draft_tokens (B = {requests.batch}, at most {HELD_REQUESTS} requests): "
            f"their device copy is made outside the graph")
    layout = requests.host.pin_memory().to(device, non_blocking=True)
    if key is not None:
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(device))
        _LAYOUTS[key] = layout, event, stream_handle(device)
        while len(_LAYOUTS) > LAYOUTS_HELD:
            _LAYOUTS.popitem(last=False)
    return layout
