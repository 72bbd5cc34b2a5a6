"""torch-sample-logits: temperature, top-k and top-p by sorting, then an exponential race.

The sort-based path most engines ship:

* x = the logits upcast to float32; z = x / t, top-k and top-p as in torch-logprobs
  (``kept_entries``: a descending sort of each row for the top-k boundary and the top-p
  cumulative sum);
* weights w = exp(z - max z) over the kept entries in float32, 0 where masked;
* token = argmax w / q with q ~ Exp(1) iid in float64 (torch's ``exponential_`` from a
  generator seeded by the call's seed, or one generator per row seeded by its request's seed
  with per-request seeds): the race picks i with probability w_i / sum w, and
  float64 noise resolves the lower tail to about 2^-53, so rare tokens win at their rate;
* rows with temperature 0: the argmax of x, the lowest index on ties (no noise).

Each step is a small function; ``Pieces`` names them so that a variant (the mutants in
kernels/mutants/sample_logits_mutants.py) can swap one piece and keep the rest.

Memory traffic: the logits read, a sort (several passes over B x V), a softmax and a float64
cumulative sum for top-p, float32 weights and float64 noise of B x V written and read back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from kernels.logprobs.torch_logprobs import Pieces as Processing
from kernels.logprobs.torch_logprobs import kept_entries, upcast
from kernels.meta import per_request_seeds
from kernels.sample.torch_race import exponential_noise

NEG_INF = float("-inf")


def exponential64(shape, device: torch.device, seed) -> torch.Tensor:
    """float64 Exp(1) variates from a generator seeded by ``seed`` (an int; or per-request
    seeds, int64 [B]: row by row, each from its request's generator)."""
    return exponential_noise(shape, torch.float64, device, seed)


def race(weights: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """argmax w / q per row: token i with probability w_i / sum_j w_j."""
    return (weights / noise).argmax(dim=1)


def greedy_rows(x: torch.Tensor, temperature: torch.Tensor, sampled: torch.Tensor
                ) -> torch.Tensor:
    """The argmax of x (first maximal index) where the temperature is 0, else ``sampled``."""
    greedy = temperature == 0
    if not bool(greedy.any()):
        return sampled
    return torch.where(greedy, x.argmax(dim=1), sampled)


@dataclass(frozen=True)
class Pieces:
    """The swappable steps (the defaults make ``sample_logits_torch``)."""

    processing: Processing = field(default_factory=Processing)  # temperature, top-k, top-p
    noise: Callable = exponential64
    race: Callable = race
    greedy: Callable = greedy_rows


def weights_of(scaled: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """exp(z - max z) over the kept entries, 0 where masked, in float32 (normal down to
    e^-87 of the head; the race divides them by float64 noise)."""
    masked = torch.where(keep, scaled, NEG_INF)
    return torch.exp(masked - masked.amax(dim=1, keepdim=True))


def sample_logits_with(logits, temperature, top_k, top_p, seed: int,
                       pieces: Pieces = Pieces()) -> torch.Tensor:
    """Family ``sample-logits`` built from ``pieces``: int64 ids [B]."""
    if logits.dim() != 2 or logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"logits must be float32, bfloat16 or float16 [B, V], got "
                         f"{logits.dtype} {tuple(logits.shape)}")
    x = upcast(logits)
    scaled, keep = kept_entries(x, temperature, top_k, top_p, pieces.processing)
    weights = weights_of(scaled, keep)
    sampled = pieces.race(weights, pieces.noise(weights.shape, x.device, seed))
    return pieces.greedy(x, temperature, sampled)


@per_request_seeds
def sample_logits_torch(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
                        top_p: torch.Tensor, seed) -> torch.Tensor:
    """Family ``sample-logits``: one token id per row, as int64 [B]."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed)
