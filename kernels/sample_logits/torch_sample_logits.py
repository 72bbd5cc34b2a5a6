"""torch-sample-logits: temperature, min-p, top-k and top-p by sorting, then an exponential
race.

The sort-based path most engines ship:

* x = the logits upcast to float32; z = x / t; min-p (where given) keeps
  z - max z >= log(min_p) in float32, ties kept; then top-k and top-p as in torch-logprobs
  (``kept_entries``: a descending sort of each row for the top-k boundary and the top-p
  cumulative sum, over the entries min-p kept);
* weights w = exp(z - max z) over the kept entries in float32, 0 where masked;
* token = argmax w / q with q ~ Exp(1) iid in float64 (torch's ``exponential_`` from a
  generator seeded by the call's seed, or one generator per row seeded by its request's seed
  with per-request seeds): the race picks i with probability w_i / sum w, and
  float64 noise resolves the lower tail to about 2^-53, so rare tokens win at their rate;
* rows with temperature 0: the argmax of x, the lowest index on ties (no noise);
* invalid rows (a NaN or +inf, or no finite logit: the row max is not finite) get the
  contract's sentinel id 0; every computation above is row by row, so they touch no other
  row.

Each step is a small function; ``Pieces`` names them so that a variant (the mutants in
kernels/mutants/sample_logits_mutants.py) can swap one piece and keep the rest.

Memory traffic: the logits read, with min-p one more pass (a max and a compare), a sort
(several passes over B x V), a softmax and a float64 cumulative sum for top-p, float32
weights and float64 noise of B x V written and read back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch

from sampling_harness.kernels.logprobs.torch_logprobs import Pieces as Processing
from sampling_harness.kernels.logprobs.torch_logprobs import kept_entries, upcast
from sampling_harness.kernels.meta import per_request_seeds
from sampling_harness.kernels.sample.torch_race import exponential_noise

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


def min_p_keep(keys: torch.Tensor, scaled: torch.Tensor, keep: torch.Tensor,
               min_p: torch.Tensor) -> torch.Tensor:
    """keep & (z - max z >= log(min_p)) on the scaled logits of the whole row: p_i >=
    min_p * max p, ties at the threshold kept; rows with min_p 0 unchanged."""
    top = scaled.amax(dim=1, keepdim=True)
    bound = torch.log(min_p.to(torch.float32))[:, None]     # log 0 = -inf keeps every entry
    return keep & (scaled - top >= bound)


def min_p_first(filters: tuple, min_p_filter: Callable) -> tuple:
    """vLLM's order: min-p before top-k and top-p."""
    return (min_p_filter, *filters)


def invalid_to_sentinel(x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """ids, with 0 where the row's max is not finite (torch's max propagates NaN)."""
    return torch.where(torch.isfinite(x.amax(dim=1)), ids, 0)


@dataclass(frozen=True)
class Pieces:
    """The swappable steps (the defaults make ``sample_logits_torch``)."""

    processing: Processing = field(default_factory=Processing)  # temperature, top-k, top-p
    noise: Callable = exponential64
    race: Callable = race
    greedy: Callable = greedy_rows
    min_p: Callable = min_p_keep        # (keys, scaled, keep, min_p) -> keep
    min_p_order: Callable = min_p_first  # where min-p goes among the filters
    invalid: Callable = invalid_to_sentinel


def weights_of(scaled: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """exp(z - max z) over the kept entries, 0 where masked, in float32 (normal down to
    e^-87 of the head; the race divides them by float64 noise)."""
    masked = torch.where(keep, scaled, NEG_INF)
    return torch.exp(masked - masked.amax(dim=1, keepdim=True))


def with_min_p(pieces: Pieces, min_p: torch.Tensor | None) -> Processing:
    """The processing pieces with min-p placed among the filters (unchanged without it)."""
    processing = pieces.processing
    if min_p is None or not bool((min_p > 0).any()):
        return processing

    def min_p_filter(keys, scaled, keep, top_k, top_p):
        return pieces.min_p(keys, scaled, keep, min_p)

    return replace(processing, filters=pieces.min_p_order(processing.filters, min_p_filter))


def sample_logits_with(logits, temperature, top_k, top_p, seed: int,
                       pieces: Pieces = Pieces(), min_p=None) -> torch.Tensor:
    """Family ``sample-logits`` built from ``pieces``: int64 ids [B]."""
    if logits.dim() != 2 or logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"logits must be float32, bfloat16 or float16 [B, V], got "
                         f"{logits.dtype} {tuple(logits.shape)}")
    x = upcast(logits)
    scaled, keep = kept_entries(x, temperature, top_k, top_p, with_min_p(pieces, min_p))
    weights = weights_of(scaled, keep)
    sampled = pieces.race(weights, pieces.noise(weights.shape, x.device, seed))
    return pieces.invalid(x, pieces.greedy(x, temperature, sampled))


@per_request_seeds
def sample_logits_torch(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
                        top_p: torch.Tensor, seed, min_p: torch.Tensor | None = None
                        ) -> torch.Tensor:
    """Family ``sample-logits``: one token id per row, as int64 [B]."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed, min_p=min_p)
