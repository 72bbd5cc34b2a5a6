"""Wrong proposer steps, one field bug each (declared with their bugs and catching checks by
each family: suites/<family>/__init__.py).
All take the ``spec-decode`` contract's arguments (draft_table, context, token_ids,
previous_drafts, num_spec_tokens, max_model_len, lookahead, seed)."""

from __future__ import annotations

import torch

from sampling_harness.kernels.spec_decode.torch_proposer import draw_drafts, has_room


def stale_drafts(draft_table, context, token_ids, previous_drafts, num_spec_tokens,
                 max_model_len, lookahead, seed):
    """A request without room keeps the drafts it just had verified (and zero laws): stale
    drafts are verified past max_model_len (vLLM PR 38711)."""
    drafts, probs = draw_drafts(draft_table, context, token_ids, num_spec_tokens, seed)
    for r, seq in enumerate(token_ids):
        if not has_room(len(seq), lookahead, num_spec_tokens, max_model_len):
            drafts[r] = list(previous_drafts[r])
            probs[r] = 0.0
    return drafts, probs


def probs_dropped(draft_table, context, token_ids, previous_drafts, num_spec_tokens,
                  max_model_len, lookahead, seed):
    """The drafts are proposed but their laws never cached: the rejection sampler gets None
    and takes q one-hot (vLLM PR 40269: acceptance fell from ~0.45 to ~0.22)."""
    drafts, _ = draw_drafts(draft_table, context, token_ids, num_spec_tokens, seed)
    return [d if has_room(len(s), lookahead, num_spec_tokens, max_model_len) else []
            for d, s in zip(drafts, token_ids, strict=True)], None


def cached_order(draft_table, context, token_ids, previous_drafts, num_spec_tokens,
                 max_model_len, lookahead, seed):
    """The cache rows written in request order of the cache (sorted by sequence) while
    the drafts keep the batch order: the laws reach the rejection sampler in cached order."""
    drafts, probs = draw_drafts(draft_table, context, token_ids, num_spec_tokens, seed)
    for r, seq in enumerate(token_ids):
        if not has_room(len(seq), lookahead, num_spec_tokens, max_model_len):
            drafts[r] = []
    order = sorted(range(len(token_ids)), key=lambda r: token_ids[r])
    return drafts, probs[order]


def proposer_fp32_noise(draft_table, context, token_ids, previous_drafts, num_spec_tokens,
                        max_model_len, lookahead, seed):
    """torch-proposer drawing each draft as ``argmax q / e`` with e float32 ``exponential_``."""
    drafts, probs = draw_drafts(draft_table, context, token_ids, num_spec_tokens, seed,
                                noise_dtype=torch.float32)
    for r, seq in enumerate(token_ids):
        if not has_room(len(seq), lookahead, num_spec_tokens, max_model_len):
            drafts[r] = []
            probs[r] = 0.0
    return drafts, probs


DRAFT_TOP_K = 2


def _top_k_law(q: torch.Tensor) -> torch.Tensor:
    """q restricted to its DRAFT_TOP_K largest entries, renormalised."""
    kth = q.topk(DRAFT_TOP_K, dim=1).values[:, -1:]
    kept = torch.where(q >= kth, q, 0.0)
    return kept / kept.sum(dim=1, keepdim=True)


def draft_probs_before_top_k(draft_table, context, token_ids, previous_drafts,
                             num_spec_tokens, max_model_len, lookahead, seed):
    """Drafts drawn from the top-k (k = 2) filtered draft law, while the cached laws are the
    unfiltered softmax, taken before the filter. The rejection sampler then accepts a draft
    d with min(1, p(d) / q(d)) for a q that did not draw it, and the residual misses the mass
    the filter moved: the output is no longer the target's law. Field report: transformers
    issue 47932 (draft probabilities handed over before the draft's top-k filter; TV from
    the target up to 0.31 while acceptance still looked high)."""
    drafts, probs = draw_drafts(draft_table, context, token_ids, num_spec_tokens, seed,
                                drawn_from=_top_k_law)
    for r, seq in enumerate(token_ids):
        if not has_room(len(seq), lookahead, num_spec_tokens, max_model_len):
            drafts[r] = []
            probs[r] = 0.0
    return drafts, probs
