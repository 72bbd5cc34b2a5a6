"""Wrong draft-probability hand-overs, one field bug each (registered in
kernels/mutants/__init__.py). All take (cached_probs, cached_req_ids, batch_req_ids,
num_draft_tokens)."""

from __future__ import annotations

import torch

from sampling_harness.kernels.draft_probs.torch_draft_probs import draft_probs_torch


def cached_order(cached_probs, cached_req_ids, batch_req_ids, num_draft_tokens):
    """Rows handed over in the cache's order, not the batch's (vLLM PR 40269)."""
    count = dict(zip(batch_req_ids, num_draft_tokens, strict=True))
    in_cache = [req for req in cached_req_ids if req in count]
    in_cache += [req for req in batch_req_ids if req not in set(cached_req_ids)]
    return draft_probs_torch(cached_probs, cached_req_ids, in_cache,
                             [count[req] for req in in_cache])


def stops_at_zero_drafts(cached_probs, cached_req_ids, batch_req_ids, num_draft_tokens):
    """The loop over the batch stops at the first request with no drafts."""
    first_zero = next((i for i, n in enumerate(num_draft_tokens) if n == 0),
                      len(num_draft_tokens))
    return draft_probs_torch(cached_probs, cached_req_ids, batch_req_ids[:first_zero],
                             num_draft_tokens[:first_zero])


def zeros_for_missing(cached_probs, cached_req_ids, batch_req_ids, num_draft_tokens):
    """A request missing from the cache gets rows of zeros instead of the None fallback."""
    if cached_probs is None or sum(num_draft_tokens) == 0:
        return None
    _, slots, vocab = cached_probs.shape
    row_of = {req: r for r, req in enumerate(cached_req_ids)}
    zero = torch.zeros((slots, vocab), dtype=cached_probs.dtype, device=cached_probs.device)
    parts = [(cached_probs[row_of[req]] if req in row_of else zero)[:n]
             for req, n in zip(batch_req_ids, num_draft_tokens, strict=True) if n]
    return torch.cat(parts)


def slices_all_slots(cached_probs, cached_req_ids, batch_req_ids, num_draft_tokens):
    """Every cached slot of a request handed over (K rows), not its n drafts."""
    if cached_probs is None or sum(num_draft_tokens) == 0:
        return None
    slots = cached_probs.shape[1]
    return draft_probs_torch(cached_probs, cached_req_ids, batch_req_ids,
                             [slots if n else 0 for n in num_draft_tokens])


def empty_not_none(cached_probs, cached_req_ids, batch_req_ids, num_draft_tokens):
    """No drafts in the batch: an empty [0, V] tensor instead of None."""
    if cached_probs is not None and sum(num_draft_tokens) == 0:
        return cached_probs.new_empty((0, cached_probs.shape[2]))
    return draft_probs_torch(cached_probs, cached_req_ids, batch_req_ids, num_draft_tokens)
