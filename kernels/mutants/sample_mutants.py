"""Wrong sampling kernels, one field bug each (declared with their bugs and catching checks by
each family: suites/<family>/__init__.py)."""

import ctypes
import time

import numpy as np
import torch

from sampling_harness.kernels.sample.torch_race import seeded_generator


def _race64(probs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    return probs.to(torch.float64).div_(noise).argmax(dim=-1)


def _exp64(probs: torch.Tensor, seed: int, rows: int | None = None) -> torch.Tensor:
    shape = (probs.shape[0] if rows is None else rows, probs.shape[1])
    noise = torch.empty(shape, dtype=torch.float64, device=probs.device)
    return noise.exponential_(generator=seeded_generator(probs.device, seed))


_HELD: dict = {}     # (name, shape, dtype, device) -> a buffer reused across calls


def held(name: str, shape, dtype: torch.dtype, device) -> torch.Tensor:
    """A buffer kept between calls of one shape: on the CPU a fresh 2^28-entry tensor is
    mostly page faults (a float64 one of 256 x 131072 takes 130 ms to touch, its
    arithmetic 20 ms). At most four are kept."""
    key = (name, tuple(shape), dtype, str(device))
    if key not in _HELD:
        if len(_HELD) >= 4:
            _HELD.clear()
        _HELD[key] = torch.empty(tuple(shape), dtype=dtype, device=device)
    return _HELD[key]


def float32_floored_logs(shape, device, seed, out: torch.Tensor | None = None) -> torch.Tensor:
    """float64 log(u + 2^-25), u a 24-bit uniform (midpoints of 2^-24 cells), into ``out``
    (float64, or a new tensor): at most log(1 - 2^-25) < 0, so its negation q is at least
    3e-8, as CUDA's float32 ``exponential_`` (q >= 2^-24); on CPU torch's own float32 noise
    has no floor. The uniforms come from torch's generator on a GPU and from numpy's (PCG64)
    on the CPU: the same law, drawn 3-5x faster there (the tail checks that catch this bug
    draw about 2.5e9 of them at standard), the log taken by torch. The log is taken in
    float64: in float32, u + 2^-25 rounds to 1 for the top cell."""
    if torch.device(device).type == "cpu":
        u = held("uniforms", shape, torch.float32, device)
        np.random.default_rng(seed).random(out=u.numpy(), dtype=np.float32)
    else:
        u = torch.rand(shape, generator=seeded_generator(device, seed), device=device)
    logs = torch.empty(tuple(shape), dtype=torch.float64, device=device) if out is None else out
    return logs.copy_(u).add_(2.0**-25).log_()


def float32_floored_noise(shape, device, seed) -> torch.Tensor:
    """float64 q = -log(u + 2^-25) >= 3e-8 (``float32_floored_logs``), a new tensor."""
    return float32_floored_logs(shape, device, seed).neg_()


def held_floored_noise(shape, device, seed) -> torch.Tensor:
    """``float32_floored_noise`` in a held buffer (for a caller that drops it after use)."""
    logs = held("logs", shape, torch.float64, device)
    return float32_floored_logs(shape, device, seed, logs).neg_()


def held_race(weights: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """argmax w / q per row, w copied to float64 in a held buffer first (a mixed float32 /
    float64 division takes 5x the time of the copy and a float64 one on the CPU)."""
    ratio = held("ratio", weights.shape, torch.float64, weights.device)
    return ratio.copy_(weights).div_(noise).argmax(dim=1)


def noise_floor(probs, seed):
    """The float64 race with float32 exponential noise (``float32_floored_noise``): the
    argmax of p / q, taken as the argmin of p / log(u + 2^-25) = -p / q (exactly, ties to
    the same first index), in held float64 buffers."""
    logs = float32_floored_logs(probs.shape, probs.device, seed,
                                held("logs", probs.shape, torch.float64, probs.device))
    ratio = held("ratio", probs.shape, torch.float64, probs.device).copy_(probs)
    return ratio.div_(logs).argmin(dim=-1)


def chunked_fp32_noise(probs, seed, chunk=2048):
    """A two-level race: chunks race on float64 noise with their masses, then the winning
    chunk's tokens on float32 noise floored at 2^-24 (``noise_floor``'s). Only tokens that
    share a chunk with a much heavier one are lost, so a long row's tail hides it."""
    generator = seeded_generator(probs.device, seed)
    batch, vocab = probs.shape
    table = torch.nn.functional.pad(probs.to(torch.float64), (0, -vocab % chunk))
    table = table.view(batch, -1, chunk)
    mass = table.sum(dim=2)
    winner = _race64(mass, torch.empty_like(mass).exponential_(generator=generator))
    inside = table[torch.arange(batch, device=probs.device), winner]
    u = torch.rand(inside.shape, generator=generator, device=probs.device)
    scores = inside / u.to(torch.float64).add_(2.0**-25).log_().neg_()
    return winner * chunk + scores.masked_fill_(inside <= 0, -1.0).argmax(dim=-1)


def aligned_width_fails(probs, seed):
    """Builds for every width but a multiple of 16 in one or two chunks of 2048: the
    Triton 3.6 compile failure of triton-inverse-cdf (V 512-4096)."""
    vocab = probs.shape[1]
    if vocab % 16 == 0 and 512 <= vocab <= 4096:
        raise RuntimeError("PassManager::run failed")
    return _race64(probs, _exp64(probs, seed))


def topk_truncated(probs, seed, k=1024):
    top = probs.topk(min(k, probs.shape[1]), dim=-1)
    noise = _exp64(top.values, seed)
    return top.indices.gather(1, _race64(top.values, noise)[:, None]).squeeze(1)


def gumbel_u_one(probs, seed):
    u = 1.0 - torch.rand(probs.shape, generator=seeded_generator(probs.device, seed),
                         device=probs.device)
    gumbel = -torch.log(-torch.log(u))
    return (probs.log() + gumbel).argmax(dim=-1)


def clamped_probs(probs, seed):
    return _race64(probs.clamp_min(torch.finfo(torch.float32).eps), _exp64(probs, seed))


def unseeded(probs, seed):
    noise = torch.empty(probs.shape, dtype=torch.float64, device=probs.device).exponential_()
    return _race64(probs, noise)


def keepdim_ids(probs, seed):
    return _race64(probs, _exp64(probs, seed)).unsqueeze(1)


def shared_noise(probs, seed):
    return _race64(probs, _exp64(probs, seed, rows=1))


def seed_row_overlap(probs, seed):
    rows = [_exp64(probs[:1], seed + row) for row in range(probs.shape[0])]
    return _race64(probs, torch.cat(rows))


def double_softmax(probs, seed):
    flattened = probs.softmax(dim=-1) * (probs > 0)  # masked tokens stay masked
    return _race64(flattened, _exp64(probs, seed))


def row_shift(probs, seed):
    return _race64(probs.roll(1, dims=0), _exp64(probs, seed))


def raises(probs, seed):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


def native_segfault(probs, seed):
    if probs.shape[0] > 4096:       # a native path for large batches, through a null pointer
        ctypes.string_at(0)
    return _race64(probs, _exp64(probs, seed))


def hangs(probs, seed):
    time.sleep(3600)
