"""The draft-probability hand-over of speculative decoding, as a pure function.

When the runner proposes drafts it caches, per request, the probabilities each draft was
drawn from: ``cached_probs[r, i]`` is the law of draft i of cached request ``cached_req_ids[r]``
(K drafts cached at most). At the next verification step the rejection sampler needs them in
the order of that step's batch, which the scheduler may have reordered, with requests that
have no drafts this step (skipped, without shifting the others) and requests that are new
and have no cached probabilities.

    handed_over(cached_probs, cached_req_ids, batch_req_ids, num_draft_tokens)

returns [T, V], T = sum(num_draft_tokens): for each batch request in batch order with n > 0
drafts, rows ``cached_probs[row of that request, :n]``. It returns None (the rejection
sampler then treats drafts as deterministic, one-hot) when the cache is None, when some
request with n > 0 drafts is missing from the cache, or when T = 0. A request may not ask
for more drafts than were cached (n <= K).
"""

from __future__ import annotations

import numpy as np


def handed_over(cached_probs, cached_req_ids: list[str], batch_req_ids: list[str],
                num_draft_tokens: list[int]) -> np.ndarray | None:
    """The rows the rejection sampler must receive, float32 [T, V], or None (rules above)."""
    if len(batch_req_ids) != len(num_draft_tokens):
        raise ValueError("batch_req_ids and num_draft_tokens differ in length")
    if any(n < 0 for n in num_draft_tokens):
        raise ValueError("num_draft_tokens must be >= 0")
    if cached_probs is None or sum(num_draft_tokens) == 0:
        return None
    probs = np.asarray(cached_probs.detach().cpu() if hasattr(cached_probs, "detach")
                       else cached_probs)
    if probs.ndim != 3 or probs.shape[0] != len(cached_req_ids):
        raise ValueError("cached_probs must be [R, K, V] with R = len(cached_req_ids)")
    row_of = {req: r for r, req in enumerate(cached_req_ids)}
    wanted = [(req, n) for req, n in zip(batch_req_ids, num_draft_tokens, strict=True) if n]
    if any(req not in row_of for req, _ in wanted):
        return None
    if any(n > probs.shape[1] for _, n in wanted):
        raise ValueError(f"a request asks for more drafts than the {probs.shape[1]} cached")
    return np.concatenate([probs[row_of[req], :n] for req, n in wanted])
