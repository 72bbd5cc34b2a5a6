"""The exponential race in plain torch, as inference engines write it.

token = argmax_i p_i / q_i with q_i ~ Exp(1) selects i with probability p_i / sum_j p_j.
Memory traffic: probs read, a noise tensor of B x V written and read back, scores written
and read by the argmax: about 5 passes over B x V (float64 noise: twice the bytes).
"""

import torch

from kernels.meta import baseline


def seeded_generator(device: torch.device, seed: int) -> torch.Generator | None:
    """A generator seeded with ``seed``; None (torch's default generator, which CUDA graphs
    capture) while a CUDA graph is being captured, as an engine's graphed decode step draws:
    each replay then draws fresh noise, and the seed cannot apply."""
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        return None
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator


@baseline("vLLM's random sampler (probs / q.exponential_() in float32, then argmax)",
          must_fail={"cuda": {"standard": ("tail",)}},
          may_fail={"cuda": ("tail", "fit_generated", "fit_large_vocab")})
def race_fp32(probs: torch.Tensor, seed: int) -> torch.Tensor:
    """float32 noise from torch's ``exponential_``: on CUDA it never falls below 2^-24, so
    tokens below ~1e-7 of the head lose most of their wins (the tail check's standard
    budget resolves 1e-8; the fit checks see it at standard on some rows)."""
    noise = torch.empty_like(probs).exponential_(generator=seeded_generator(probs.device, seed))
    return probs.div_(noise).argmax(dim=-1)


@baseline("torch.multinomial (Hugging Face transformers' sampler and many engines' fallback)",
          must_fail={"cuda": {"standard": ("tail",)}},
          may_fail={"cuda": ("tail", "fit_generated", "fit_large_vocab")})
def multinomial(probs: torch.Tensor, seed: int) -> torch.Tensor:
    """One draw per row from ``torch.multinomial`` with a seeded generator."""
    generator = seeded_generator(probs.device, seed)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def race_fp64(probs: torch.Tensor, seed: int) -> torch.Tensor:
    """float64 noise and float64 scores: the lower tail resolves down to about 2^-53."""
    noise = torch.empty(probs.shape, dtype=torch.float64, device=probs.device)
    noise.exponential_(generator=seeded_generator(probs.device, seed))
    return probs.to(torch.float64).div_(noise).argmax(dim=-1)
