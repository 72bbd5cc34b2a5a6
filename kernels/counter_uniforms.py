"""Counter-based uniforms in plain torch: one stream per request, vectorised over requests.

Draw i of the stream keyed by k is splitmix64's output mix(k + (i + 1) gamma) (gamma the
golden-ratio increment, mix its finaliser: a bijection of 64-bit words that passes BigCrush
as a sequence generator), in torch int64 arithmetic, which wraps. The key of request b is
mix(seed 2^32 + b) for an int seed, mix(s_b 2^32) for a per-request seed s_b (as request 0 of
that int seed), and a fresh random word for an unseeded request. So a request's draws
depend on its key alone, never on its batch-mates, and CPU and GPU give the same draws.

Memory traffic: int64 temporaries of the draws' shape (about 8 passes of 8 bytes a draw).
"""

from __future__ import annotations

import torch

from sampling_harness.kernels.request_seeds import UNSEEDED, request_seeds


def _signed(word: int) -> int:
    return word - (1 << 64) if word >= 1 << 63 else word


GAMMA = _signed(0x9E3779B97F4A7C15)
MIX1 = _signed(0xBF58476D1CE4E5B9)
MIX2 = _signed(0x94D049BB133111EB)


def _shr(z: torch.Tensor, n: int) -> torch.Tensor:
    """Logical right shift of int64 words (torch's is arithmetic)."""
    return (z >> n) & ((1 << (64 - n)) - 1)


def mix64(z: torch.Tensor) -> torch.Tensor:
    """splitmix64's finaliser of int64 words (wrapping multiplication)."""
    z = (z ^ _shr(z, 30)) * MIX1
    z = (z ^ _shr(z, 27)) * MIX2
    return z ^ _shr(z, 31)


def request_keys(seed, batch: int, device: torch.device) -> torch.Tensor:
    """int64 [B]: the stream key of each request (module docstring)."""
    seeds = request_seeds(seed, batch, device)
    if seeds is None:
        words = seed * 2**32 + torch.arange(batch, dtype=torch.int64, device=device)
        return mix64(words)
    fresh = torch.randint(0, 2**62, (batch,), dtype=torch.int64, device=device)
    return torch.where(seeds == UNSEEDED, fresh, mix64(seeds * 2**32))


def uniforms(keys: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """float64 u in (0, 1): draw ``index`` of the streams ``keys`` (broadcast together),
    (m + 1/2) 2^-53 for m the top 53 bits of the word: never 0, never 1."""
    words = mix64(keys + (index + 1) * GAMMA)
    return (_shr(words, 11).to(torch.float64) + 0.5) * 2.0**-53
