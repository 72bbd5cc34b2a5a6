"""torch-logprobs: the value (and rank) of requested token ids in four modes, in plain torch.

x = the logits upcast to float32 (every step below runs in float32; cumulative sums of
probabilities in float64).

* Processed logits: z = x / t (t = 1 where the temperature is 0); top-k keeps x >= x_(k), the
  k-th largest (ties kept; k <= 0 or k >= V disables); top-p, on softmax(z) over the kept
  entries sorted by decreasing x, keeps every entry whose exclusive cumulative probability is
  < top_p (the first always), and with it every entry tied with the last one kept (top_p >= 1
  disables). Each filter keeps a set {x >= c} of the row, so the kept set is one threshold on
  x. Masked entries become -inf.
* Modes: raw_logits = x, raw_logprobs = log_softmax(x), processed_logits = z masked,
  processed_logprobs = log_softmax(z masked); the requested ids gathered, -inf at padding.
* Ranks: #{j : key_j >= key_i}, key = x (raw modes) or x where kept, -inf where masked
  (processed modes). x -> x - lse and x -> x / t are increasing, so this is the count on the
  mode's exact values, free of the ties float32 rounding of x - lse or x / t would create.
  Counted by a binary search of the sorted keys.

Each step is a small function; ``Pieces`` names them so that a variant (the mutants in
kernels/mutants/logprobs_mutants.py) can swap one piece and keep the rest.

Memory traffic: raw modes read the logits once for log_softmax, once for the rank sort
(plus the sort's own passes); processed modes add a sort of the row, a softmax and a float64
cumulative sum over [B, V].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch

NEG_INF = float("-inf")
MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")


def upcast(logits: torch.Tensor) -> torch.Tensor:
    """float32 [B, V]: the logits' exact values (bf16 and fp16 upcast exactly)."""
    return logits.to(torch.float32)


def scale_by_temperature(x: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
    """z = x / t per row in float32; rows with t = 0 are left unscaled."""
    t = temperature.to(torch.float32)
    return x / torch.where(t == 0, torch.ones_like(t), t)[:, None]


def top_k_keep(keys: torch.Tensor, scaled: torch.Tensor, keep: torch.Tensor,
               top_k: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """keep & (key >= the k-th largest kept key): ties at the boundary kept; rows with
    k <= 0 or k >= V unchanged."""
    vocab = keys.shape[1]
    active = (top_k > 0) & (top_k < vocab)
    if not bool(active.any()):  # as engines do: no sort when no row asks for top-k
        return keep
    ordered = torch.where(keep, keys, NEG_INF).sort(dim=1, descending=True).values
    kth = ordered.gather(1, (top_k.clamp(1, vocab) - 1)[:, None])
    return keep & (~active[:, None] | (keys >= kth))


def top_p_keep(keys: torch.Tensor, scaled: torch.Tensor, keep: torch.Tensor,
               top_k: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """keep & (key >= c): c the key of the last entry, in decreasing key order, whose
    exclusive cumulative probability under softmax(scaled over kept) is < top_p (the first
    entry always counts); rows with top_p >= 1 unchanged."""
    if not bool((top_p < 1).any()):
        return keep
    masked = torch.where(keep, scaled, NEG_INF)
    probs = masked.softmax(dim=1)
    order = torch.where(keep, keys, NEG_INF).argsort(dim=1, descending=True, stable=True)
    sorted_probs = probs.gather(1, order).to(torch.float64)
    before = sorted_probs.cumsum(dim=1) - sorted_probs
    p = top_p.to(torch.float64)[:, None]
    first = torch.arange(keys.shape[1], device=keys.device)[None, :] == 0
    inside = ((before < p) | first) & keep.gather(1, order)
    cutoff = torch.where(inside, keys.gather(1, order), float("inf")).amin(dim=1)
    return keep & ((top_p >= 1)[:, None] | (keys >= cutoff[:, None]))


def mode_values(mode: str, raw: torch.Tensor, processed: Callable, log_softmax: Callable
                ) -> torch.Tensor:
    """float32 [B, V]: the row of values of the mode; ``processed()`` gives the processed
    logits (computed only when asked)."""
    rows = processed() if mode.startswith("processed") else raw
    return log_softmax(rows) if mode.endswith("logprobs") else rows


def log_softmax32(rows: torch.Tensor) -> torch.Tensor:
    """log_softmax in float32 (-inf stays -inf)."""
    return torch.log_softmax(rows.to(torch.float32), dim=1)


def padding_slots(token_ids: torch.Tensor, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids safe to gather (padding read as 0), bool padding mask: id < 0)."""
    padding = token_ids < 0
    return torch.where(padding, 0, token_ids), padding


def gather_values(rows: torch.Tensor, safe_ids: torch.Tensor, padding: torch.Tensor
                  ) -> torch.Tensor:
    """float32 [B, K]: rows at the ids, -inf at padding."""
    return torch.where(padding, NEG_INF, rows.gather(1, safe_ids))


def count_at_least(keys: torch.Tensor, token_keys: torch.Tensor) -> torch.Tensor:
    """int64 [B, K]: #{j : keys_j >= token_key}, V minus the left insertion point."""
    ascending = keys.sort(dim=1).values
    below = torch.searchsorted(ascending, token_keys.contiguous(), side="left")
    return keys.shape[1] - below


@dataclass(frozen=True)
class Pieces:
    """The swappable steps of the kernel (the defaults make ``logprobs_torch``)."""

    scale: Callable = scale_by_temperature
    filters: tuple[Callable, ...] = (top_k_keep, top_p_keep)   # applied in order
    mode_values: Callable = mode_values
    log_softmax: Callable = log_softmax32
    padding: Callable = padding_slots
    gather: Callable = gather_values
    ranks: Callable = count_at_least


def kept_entries(x: torch.Tensor, temperature, top_k, top_p, pieces: Pieces = Pieces()
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """(scaled float32 [B, V], bool [B, V] kept by the filters)."""
    scaled = pieces.scale(x, temperature)
    keep = torch.ones_like(x, dtype=torch.bool)
    for keep_filter in pieces.filters:
        keep = keep_filter(x, scaled, keep, top_k, top_p)
    return scaled, keep


def logprobs_with(logits, token_ids, mode: str, temperature, top_k, top_p,
                  pieces: Pieces = Pieces()) -> tuple[torch.Tensor, torch.Tensor]:
    """Family ``logprobs`` built from ``pieces``: (values float32 [B, K], ranks int64 [B, K])."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    x = upcast(logits)

    @cache
    def processing():
        return kept_entries(x, temperature, top_k, top_p, pieces)

    def processed():
        scaled, keep = processing()
        return torch.where(keep, scaled, NEG_INF)

    rows = pieces.mode_values(mode, x, processed, pieces.log_softmax)
    safe_ids, padding = pieces.padding(token_ids, x.shape[1])
    values = pieces.gather(rows, safe_ids, padding)
    keys = torch.where(processing()[1], x, NEG_INF) if mode.startswith("processed") else x
    ranks = pieces.ranks(keys, keys.gather(1, safe_ids))
    return values.to(torch.float32), torch.where(padding, 0, ranks)


def logprobs_gather(logits: torch.Tensor, token_ids: torch.Tensor, mode: str,
                    temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor
                    ) -> torch.Tensor:
    """Family ``logprobs``, values only (ranks are optional): the mode's row (log_softmax of
    the logits in raw_logprobs) gathered at the ids, as engines ship it. The bench's
    baseline: in raw modes one log_softmax over [B, V] and a gather, no sort."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    x = upcast(logits)

    def processed():
        scaled, keep = kept_entries(x, temperature, top_k, top_p)
        return torch.where(keep, scaled, NEG_INF)

    rows = mode_values(mode, x, processed, log_softmax32)
    safe_ids, padding = padding_slots(token_ids, x.shape[1])
    return gather_values(rows, safe_ids, padding).to(torch.float32)


def logprobs_torch(logits: torch.Tensor, token_ids: torch.Tensor, mode: str,
                   temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Family ``logprobs``: (values float32 [B, K], -inf at padding; ranks int64 [B, K])."""
    return logprobs_with(logits, token_ids, mode, temperature, top_k, top_p)
