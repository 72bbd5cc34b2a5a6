"""Wrong logprobs kernels, one field bug each (declared with their bugs and catching checks by
each family: suites/<family>/__init__.py).

Each is torch-logprobs (kernels/logprobs/torch_logprobs.py) with one piece swapped, so that
everything but the bug is the clean kernel. All take the contract's arguments in order:
(logits, token_ids, mode, temperature, top_k, top_p).
"""

from __future__ import annotations

import torch

from sampling_harness.kernels.logprobs.torch_logprobs import (
    Pieces,
    logprobs_with,
    mode_values,
    scale_by_temperature,
    top_k_keep,
    top_p_keep,
)


def _logits_for_raw_logprobs(mode, raw, processed, log_softmax):
    """raw_logprobs gathers the logits themselves (no log_softmax)."""
    return raw if mode == "raw_logprobs" else mode_values(mode, raw, processed, log_softmax)


def gathered_from_logits(logits, token_ids, mode, temperature, top_k, top_p):
    """Requested ids gathered from the logits, not the logprobs, in raw_logprobs mode
    (vLLM PR 43125)."""
    return logprobs_with(logits, token_ids, mode, temperature, top_k, top_p,
                         Pieces(mode_values=_logits_for_raw_logprobs))


def _processed_in_every_mode(mode, raw, processed, log_softmax):
    """The processed row is used whatever the mode says."""
    rows = processed()
    return log_softmax(rows) if mode.endswith("logprobs") else rows


def processed_in_raw_mode(logits, token_ids, mode, temperature, top_k, top_p):
    """Raw modes return the processed values (after temperature, top-k and top-p)."""
    return logprobs_with(logits, token_ids, mode, temperature, top_k, top_p,
                         Pieces(mode_values=_processed_in_every_mode))


def _negative_index(token_ids: torch.Tensor, vocab: int):
    """Python indexing: id -1 reads entry V - 1, and no slot is marked as padding."""
    return token_ids % vocab, torch.zeros_like(token_ids, dtype=torch.bool)


def padding_as_last_entry(logits, token_ids, mode, temperature, top_k, top_p):
    """Padding id -1 read as the last vocabulary entry; its value returned instead of -inf."""
    return logprobs_with(logits, token_ids, mode, temperature, top_k, top_p,
                         Pieces(padding=_negative_index))


def _bf16_log_softmax(rows: torch.Tensor) -> torch.Tensor:
    """log_softmax computed in bfloat16, then upcast."""
    return torch.log_softmax(rows.to(torch.bfloat16), dim=1).to(torch.float32)


def bf16_log_softmax(logits, token_ids, mode, temperature, top_k, top_p):
    """log_softmax computed in bfloat16."""
    return logprobs_with(logits, token_ids, mode, temperature, top_k, top_p,
                         Pieces(log_softmax=_bf16_log_softmax))


def _count_greater(keys: torch.Tensor, token_keys: torch.Tensor) -> torch.Tensor:
    """#{j : keys_j > token_key}: the token itself and its ties not counted."""
    ascending = keys.sort(dim=1).values
    return keys.shape[1] - torch.searchsorted(ascending, token_keys.contiguous(), side="right")


def ranks_strict(logits, token_ids, mode, temperature, top_k, top_p):
    """Ranks counted with > instead of >=."""
    return logprobs_with(logits, token_ids, mode, temperature, top_k, top_p,
                         Pieces(ranks=_count_greater))


def scale_twice(x: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
    """x / t / t: the sampler's temperature step applied on already scaled logits."""
    return scale_by_temperature(scale_by_temperature(x, temperature), temperature)


def temperature_twice(logits, token_ids, mode, temperature, top_k, top_p):
    """Processed modes divide by the temperature twice."""
    return logprobs_with(logits, token_ids, mode, temperature, top_k, top_p,
                         Pieces(scale=scale_twice))


def top_k_exact(keys, scaled, keep, top_k, top_p):
    """Exactly k entries kept: the first k of a stable descending sort, ties at the boundary
    dropped by index."""
    vocab = keys.shape[1]
    order = torch.where(keep, keys, float("-inf")).argsort(dim=1, descending=True, stable=True)
    position = torch.empty_like(order).scatter_(
        1, order, torch.arange(vocab, device=keys.device).expand_as(order).contiguous())
    active = (top_k > 0) & (top_k < vocab)
    return keep & (~active[:, None] | (position < top_k[:, None]))


def topk_drops_ties(logits, token_ids, mode, temperature, top_k, top_p):
    """Top-k keeps exactly k entries, dropping ties at the boundary."""
    return logprobs_with(logits, token_ids, mode, temperature, top_k, top_p,
                         Pieces(filters=(top_k_exact, top_p_keep)))

def topp_before_topk(logits, token_ids, mode, temperature, top_k, top_p):
    """Top-p applied on the full distribution, before top-k."""
    return logprobs_with(logits, token_ids, mode, temperature, top_k, top_p,
                         Pieces(filters=(top_p_keep, top_k_keep)))


def top_p_inclusive(keys, scaled, keep, top_k, top_p):
    """Keeps entries whose inclusive cumulative probability is < top_p (the first always):
    the token that crosses the threshold is dropped."""
    probs = torch.where(keep, scaled, float("-inf")).softmax(dim=1)
    order = torch.where(keep, keys, float("-inf")).argsort(dim=1, descending=True, stable=True)
    through = probs.gather(1, order).to(torch.float64).cumsum(dim=1)
    first = torch.arange(keys.shape[1], device=keys.device)[None, :] == 0
    inside = ((through < top_p.to(torch.float64)[:, None]) | first) & keep.gather(1, order)
    cutoff = torch.where(inside, keys.gather(1, order), float("inf")).amin(dim=1)
    return keep & ((top_p >= 1)[:, None] | (keys >= cutoff[:, None]))


def topp_excludes_crossing(logits, token_ids, mode, temperature, top_k, top_p):
    """Top-p drops the token whose cumulative probability crosses the threshold."""
    return logprobs_with(logits, token_ids, mode, temperature, top_k, top_p,
                         Pieces(filters=(top_k_keep, top_p_inclusive)))
