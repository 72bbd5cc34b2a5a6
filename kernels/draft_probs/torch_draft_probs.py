"""torch-draft-probs: the cached draft probabilities handed to the rejection sampler.

For each request of the batch in batch order with n > 0 drafts, the first n cached rows of
that request, gathered by one ``index_select`` over the cache viewed as [R K, V]; None when
the cache is None, when a request with drafts has no cached rows, or when no request has
drafts (the rejection sampler then takes the drafts as one-hot). Semantics:
reference/draft_probs.py.

Memory traffic: T V floats read from the cache and written (T = sum of the draft counts),
plus the [T] row index copied to the device.
"""

from __future__ import annotations

import torch


def cache_rows(cached_req_ids: list[str], batch_req_ids: list[str],
               num_draft_tokens: list[int], slots: int) -> list[int] | None:
    """Rows of the [R K, V] cache view, in batch order; None if a request is missing."""
    row_of = {req: r for r, req in enumerate(cached_req_ids)}
    rows: list[int] = []
    for req, n in zip(batch_req_ids, num_draft_tokens, strict=True):
        if n == 0:
            continue
        if req not in row_of:
            return None
        rows.extend(row_of[req] * slots + i for i in range(n))
    return rows


def draft_probs_torch(cached_probs: torch.Tensor | None, cached_req_ids: list[str],
                      batch_req_ids: list[str], num_draft_tokens: list[int]
                      ) -> torch.Tensor | None:
    """Family ``draft-probs``: float32 [T, V] in batch order, or None."""
    if cached_probs is None or sum(num_draft_tokens) == 0:
        return None
    cached, slots, vocab = cached_probs.shape
    rows = cache_rows(cached_req_ids, batch_req_ids, num_draft_tokens, slots)
    if rows is None:
        return None
    index = torch.tensor(rows, dtype=torch.int64, device=cached_probs.device)
    return cached_probs.reshape(cached * slots, vocab).index_select(0, index)
