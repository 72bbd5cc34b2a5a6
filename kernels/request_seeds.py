"""Per-request seeds: the ``seed`` argument of families sample, sample-logits and rejection.

``seed`` is an int in [0, 2^31) (one seed per call: row r's draws are keyed by (seed, r)) or
an int64 tensor [B] on the inputs' device, one seed per request: entries in [0, 2^31) seed
their request alone (its draws are keyed by that seed, whatever its row), and -1 marks an
unseeded request, which draws fresh randomness on every call without disturbing the others.

Torch only (no harness, no Triton): the torch kernels and the Triton wrappers share it.
"""

from __future__ import annotations

import torch

UNSEEDED = -1


def request_seeds(seed, batch: int, device: torch.device) -> torch.Tensor | None:
    """None for an int seed; the seed tensor itself when it is int64 [batch] on ``device``
    with every entry in [0, 2^31) or -1; otherwise a one-line ValueError naming what is wrong
    (the entries are read once the layout is right: one synchronisation, skipped while a
    CUDA graph is being captured, where it is not allowed)."""
    if not isinstance(seed, torch.Tensor):
        return None
    if seed.dtype != torch.int64 or tuple(seed.shape) != (batch,) or seed.device != device:
        raise ValueError(f"per-request seeds must be int64 [{batch}] on {device}, got "
                         f"{seed.dtype} {tuple(seed.shape)} on {seed.device}")
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        return seed
    bad = (seed < UNSEEDED) | (seed >= 2**31)
    if bool(bad.any()):
        row = int(bad.nonzero()[0, 0])
        raise ValueError(f"per-request seed {int(seed[row])} at row {row}: seeds lie in "
                         f"[0, 2^31), or are -1 for an unseeded request")
    return seed


def fresh_for_unseeded(seeds: torch.Tensor) -> torch.Tensor:
    """``seeds`` with each -1 replaced by a fresh seed from torch's default generator of the
    device (no synchronisation: an unseeded row draws anew on every call)."""
    fresh = torch.randint(0, 2**31 - 1, seeds.shape, dtype=torch.int64, device=seeds.device)
    return torch.where(seeds == UNSEEDED, fresh, seeds)


def row_generators(seeds: torch.Tensor) -> list[torch.Generator | None]:
    """One generator per request, seeded by its seed; None (torch's default generator) for
    an unseeded one. One synchronisation (the seeds are read on the host)."""
    device = seeds.device
    out: list[torch.Generator | None] = []
    for value in seeds.tolist():
        if value == UNSEEDED:
            out.append(None)
            continue
        generator = torch.Generator(device=device)
        generator.manual_seed(value)
        out.append(generator)
    return out
