"""The exponential race in plain torch, as inference engines write it.

token = argmax_i p_i / q_i with q_i ~ Exp(1) selects i with probability p_i / sum_j p_j.
An int seed seeds one generator for the whole [B, V] noise (row r's noise is elements
r V .. r V + V - 1 of its stream); per-request seeds (int64 [B]) seed one generator per row,
as engines keep a generator per seeded request (a loop over rows, one synchronisation).
Memory traffic: probs read, a noise tensor of B x V written and read back, scores written
and read by the argmax: about 5 passes over B x V (float64 noise: twice the bytes).
"""

import torch

from sampling_harness.kernels.meta import baseline, per_request_seeds
from sampling_harness.kernels.request_seeds import request_seeds, row_generators


def seeded_generator(device: torch.device, seed: int) -> torch.Generator | None:
    """A generator seeded with ``seed``; None (torch's default generator, which CUDA graphs
    capture) while a CUDA graph is being captured, as an engine's graphed decode step draws:
    each replay then draws fresh noise, and the seed cannot apply."""
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        return None
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator


def exponential_noise(shape, dtype: torch.dtype, device: torch.device, seed) -> torch.Tensor:
    """Exp(1) noise [B, V]: from one generator seeded by an int ``seed``, or row by row from
    each request's generator (per-request seeds; torch's default one for an unseeded row)."""
    noise = torch.empty(shape, dtype=dtype, device=device)
    seeds = request_seeds(seed, shape[0], device)
    if seeds is None:
        return noise.exponential_(generator=seeded_generator(device, seed))
    for row, generator in enumerate(row_generators(seeds)):
        noise[row].exponential_(generator=generator)
    return noise


@per_request_seeds
@baseline("vLLM's random sampler (probs / q.exponential_() in float32, then argmax)",
          must_fail={"cuda": {"standard": ("tail",)}},
          may_fail={"cuda": ("tail", "fit_generated", "fit_large_vocab")})
def race_fp32(probs: torch.Tensor, seed) -> torch.Tensor:
    """float32 noise from torch's ``exponential_``: on CUDA it never falls below 2^-24, so
    tokens below ~1e-7 of the head lose most of their wins (the tail check's standard
    budget resolves 1e-8; the fit checks see it at standard on some rows)."""
    noise = exponential_noise(probs.shape, probs.dtype, probs.device, seed)
    return probs.div_(noise).argmax(dim=-1)


@per_request_seeds
@baseline("torch.multinomial (Hugging Face transformers' sampler and many engines' fallback)",
          must_fail={"cuda": {"standard": ("tail",)}},
          may_fail={"cuda": ("tail", "fit_generated", "fit_large_vocab")})
def multinomial(probs: torch.Tensor, seed) -> torch.Tensor:
    """One draw per row from ``torch.multinomial`` with a seeded generator (per-request
    seeds: one call per row with its own generator)."""
    seeds = request_seeds(seed, probs.shape[0], probs.device)
    if seeds is None:
        generator = seeded_generator(probs.device, seed)
        return torch.multinomial(probs, 1, generator=generator).squeeze(1)
    ids = torch.empty(probs.shape[0], dtype=torch.int64, device=probs.device)
    for row, generator in enumerate(row_generators(seeds)):
        ids[row] = torch.multinomial(probs[row], 1, generator=generator)[0]
    return ids


@per_request_seeds
def race_fp64(probs: torch.Tensor, seed) -> torch.Tensor:
    """float64 noise and float64 scores: the lower tail resolves down to about 2^-53."""
    noise = exponential_noise(probs.shape, torch.float64, probs.device, seed)
    return probs.to(torch.float64).div_(noise).argmax(dim=-1)
