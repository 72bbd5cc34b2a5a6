"""Wrong proposer steps, one field bug each (registered in pyproject.toml).
All take the ``spec-decode`` contract's arguments (draft_table, context, token_ids,
previous_drafts, num_spec_tokens, max_model_len, lookahead, seed)."""

from __future__ import annotations

import torch
from sampling_harness.kernels.meta import mutant
from sampling_harness.kernels.spec_decode.torch_proposer import draw_drafts, has_room


@mutant(("tme", "length"), "quick",
        bug="a request too close to max_model_len to draft keeps its stale drafts, which are "
            "verified past the limit: garbage logprobs (vLLM PR 38711, TME ~1.4e11)")
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


@mutant(("acceptance",), "quick",
        bug="draft probabilities never handed to the rejection sampler: q taken one-hot, acceptance"
            " p(d) instead of min(1, p/q) (vLLM PR 40269)")
def probs_dropped(draft_table, context, token_ids, previous_drafts, num_spec_tokens,
                  max_model_len, lookahead, seed):
    """The drafts are proposed but their laws never cached: the rejection sampler gets None
    and takes q one-hot (vLLM PR 40269: acceptance fell from ~0.45 to ~0.22)."""
    drafts, _ = draw_drafts(draft_table, context, token_ids, num_spec_tokens, seed)
    return [d if has_room(len(s), lookahead, num_spec_tokens, max_model_len) else []
            for d, s in zip(drafts, token_ids, strict=True)], None


@mutant(("law", "acceptance"), "quick",
        bug="draft probabilities cached in another order than the drafts: the rejection sampler "
            "verifies each draft against another request's law")
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


@mutant(("tail",), "standard", devices=("cuda",),
        bug="the proposer samples its drafts by a race on float32 exponential noise: CUDA's "
            "exponential_ never goes below 2^-24, so draft tokens below about 1e-8 x the head "
            "are never proposed (vLLM's compute_probs_and_sample_next_token before PR 43150)")
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


@mutant(("law",), "quick",
        bug="the drafter samples under top-k 2 but hands over the unfiltered softmax as its "
            "draft probabilities: the rejection sampler corrects against the wrong q "
            "(transformers issue 47932: TV from the target up to 0.31, acceptance still high)")
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
