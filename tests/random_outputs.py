"""Kernels that return random but contract-valid outputs, one per family (issue 50).

Each meets its family's contract in everything the exact validation can see (shape, dtype,
device, value ranges, -1 placeholders, greedy rows, read-only inputs, the same output for
the same inputs and seed) and in nothing the statistics judge: where the law leaves a
choice, the choice is drawn from ``skewed``, half the mass on the first allowed token and
half spread evenly over all allowed tokens. That law is neither a check's target law nor,
where a check's law is uniform over its support, that uniform law; so every statistical
check must FAIL on these kernels, and no check may raise on them
(tests/test_random_outputs.py). Two choices the statistics would otherwise miss or the
validation forbid: ``random_spec_decode`` hands over draft probs that did not draw its
drafts (with honest ones, or none, speculative decoding stays exact whatever the drafts),
and ``random_sample_logits`` draws only tokens the filters may keep, which it asks of the
float64 reference (reference/processed.py). Randomness comes from a ``torch.Generator``
seeded by the call's seed (the families without a seed use a fixed one), so two calls with
the same seed and inputs agree; requests are not batch-invariant (no check here asks them
to be).
"""

from __future__ import annotations

import torch

from sampling_harness.reference.processed import process

FIXED_SEED = 50                 # the families whose contract passes no seed


def _generator(device: torch.device, seed: int) -> torch.Generator:
    """A generator on ``device`` seeded with ``seed``: the call's own random stream."""
    return torch.Generator(device=device).manual_seed(int(seed))


def skewed(allowed: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """int64 [B]: one token per row of ``allowed`` (bool [B, V], at least one True a row),
    the first allowed token with probability 1/2 + 1/(2n), each other allowed one 1/(2n)."""
    count = allowed.sum(dim=1)
    u = torch.rand((allowed.shape[0], 2), dtype=torch.float64, device=allowed.device,
                   generator=generator)
    rank = torch.minimum((u[:, 1] * count).long(), count - 1)
    rank = torch.where(u[:, 0] < 0.5, 0, rank)
    position = allowed.long().cumsum(dim=1) - 1
    return (allowed & (position == rank[:, None])).to(torch.int8).argmax(dim=1)


def random_sample(probs, seed):
    """Family ``sample``: a skewed draw among the tokens of positive probability."""
    return skewed(probs > 0, _generator(probs.device, seed))


def _possibly_kept(logits, temperature, top_k, top_p, min_p, rows) -> torch.Tensor:
    """bool [B, V]: the tokens that temperature, min-p, top-k and top-p keep under some
    float32 resolution (reference/processed.py ``possible``: the surely kept and the
    ambiguous ones, which a kernel may draw either way) on ``rows`` (bool [B]: valid and
    sampled), True elsewhere. Each distinct row is processed once: the checks repeat their
    rows many times a call."""
    kept = torch.ones(logits.shape, dtype=torch.bool)
    at = rows.cpu().nonzero().squeeze(1)
    if at.numel():
        settings = [v.cpu()[at] for v in (temperature, top_k, top_p, min_p) if v is not None]
        key = torch.cat([logits.cpu()[at].double()] + [v.double()[:, None] for v in settings], 1)
        distinct, inverse = torch.unique(key, dim=0, return_inverse=True)
        first = torch.empty(distinct.shape[0], dtype=torch.int64).scatter_(0, inverse, at)
        pick = (lambda v: None if v is None else v.cpu()[first])
        done = process(logits.cpu()[first], pick(temperature), pick(top_k), pick(top_p),
                       min_p=pick(min_p))
        kept[at] = torch.from_numpy(done.possible)[inverse]
    return kept.to(logits.device)


def random_sample_logits(logits, temperature, top_k, top_p, seed, *, min_p=None):
    """Family ``sample-logits``: the sentinel 0 on invalid rows, the argmax on greedy rows,
    else a skewed draw among the tokens the filters may keep (the float64 reference's set:
    a draw outside it is a certain failure, not the statistics' to find)."""
    invalid = ~torch.isfinite(logits.amax(dim=1))
    greedy = temperature == 0
    allowed = _possibly_kept(logits, temperature, top_k, top_p, min_p, ~invalid & ~greedy)
    ids = skewed(allowed, _generator(logits.device, seed))
    ids = torch.where(greedy, logits.argmax(dim=1), ids)
    return torch.where(invalid, 0, ids)


def _residual(target, draft, d):
    """bool [B, V]: the support of the residual max(p - q, 0) (q one-hot at the draft ``d``
    without draft probs), or of p where the residual is empty."""
    if draft is None:
        tokens = torch.arange(target.shape[1], device=target.device)
        residual = (target > 0) & (tokens[None, :] != d[:, None])
    else:
        residual = target > draft
    return torch.where(residual.any(dim=1, keepdim=True), residual, target > 0)


def random_rejection(draft_token_ids, num_draft_tokens, draft_probs, target_probs,
                     bonus_token_ids, greedy, seed):
    """Family ``rejection``: a draft with p(d) >= q(d) accepted and one with p(d) = 0
    rejected (as the contract forces), any other by a fair coin; at the first rejection a
    skewed draw from the residual's support; the bonus after all n; greedy rows exact."""
    device, generator = target_probs.device, _generator(target_probs.device, seed)
    counts = torch.as_tensor(list(num_draft_tokens), dtype=torch.int64, device=device)
    batch, width = counts.numel(), max(num_draft_tokens, default=0) + 1
    starts = torch.cumsum(counts, 0) - counts
    out = torch.full((batch, width), -1, dtype=torch.int64, device=device)
    going = torch.ones(batch, dtype=torch.bool, device=device)
    rows = torch.arange(batch, device=device)
    for j in range(width - 1):
        t = (starts + j).clamp(max=draft_token_ids.numel() - 1)
        d, p = draft_token_ids[t], target_probs[t]
        q = None if draft_probs is None else draft_probs[t]
        p_d = p.gather(1, d[:, None]).squeeze(1)
        q_d = torch.ones_like(p_d) if q is None else q.gather(1, d[:, None]).squeeze(1)
        coin = torch.rand(batch, device=device, generator=generator) < 0.5
        best = p.argmax(dim=1)
        accept = torch.where(greedy, d == best, (p_d > 0) & ((p_d >= q_d) | coin))
        emitted = torch.where(greedy, best, skewed(_residual(p, q, d), generator))
        here = going & (j < counts)
        out[rows, j] = torch.where(here, torch.where(accept, d, emitted), out[:, j])
        going &= ~here | accept
    bonus_at = torch.where(going, counts, width)                 # past the row: dropped
    out = torch.cat([out, out.new_full((batch, 1), -1)], dim=1)
    out[rows, bonus_at] = torch.where(going, bonus_token_ids, -1)
    return out[:, :width]


def random_logprobs(logits, token_ids, mode, temperature, top_k, top_p):
    """Family ``logprobs``: random finite values in (-20, 0], -inf at padding, and random
    ranks in [1, V] (no seed is passed: a fixed one)."""
    generator = _generator(logits.device, FIXED_SEED)
    shape, vocab = token_ids.shape, logits.shape[1]
    values = -20.0 * torch.rand(shape, device=logits.device, generator=generator)
    values = torch.where(token_ids < 0, float("-inf"), values)
    ranks = torch.randint(1, vocab + 1, shape, device=logits.device, generator=generator)
    return values, ranks


def random_draft_probs(cached_probs, cached_req_ids, batch_req_ids, num_draft_tokens):
    """Family ``draft-probs``: None without a cache or drafts, else random rows of the right
    shape (softmax of Gaussian logits), whichever requests the cache holds."""
    total = sum(num_draft_tokens)
    if cached_probs is None or total == 0:
        return None
    generator = _generator(cached_probs.device, FIXED_SEED)
    logits = torch.randn((total, cached_probs.shape[2]), device=cached_probs.device,
                         generator=generator)
    return logits.softmax(dim=1)


def random_spec_decode(draft_table, context, token_ids, previous_drafts, num_spec_tokens,
                       max_model_len, lookahead, seed):
    """Family ``spec-decode``: K skewed draws over the vocabulary, whatever the draft model
    says, for each request with room (L + lookahead + K + 1 <= max_model_len), none for the
    others; the draft probs handed over uniform, a law that did not draw them (honest
    probs would leave the engine's output law exact, and None too: with q one-hot the
    rejection sampler is exact for drafts of any law, so ``law`` could not see them)."""
    device, vocab, batch = draft_table.device, draft_table.shape[1], len(token_ids)
    room = [len(s) + lookahead + num_spec_tokens + 1 <= max_model_len for s in token_ids]
    every = torch.ones((batch, vocab), dtype=torch.bool, device=device)
    generator = _generator(device, seed)
    drawn = [skewed(every, generator).tolist() for _ in range(num_spec_tokens)]
    drafts = [[slot[r] for slot in drawn] if room[r] else [] for r in range(batch)]
    probs = torch.full((batch, num_spec_tokens, vocab), 1.0 / vocab, device=device)
    probs[~torch.as_tensor(room, dtype=torch.bool, device=device)] = 0.0
    return drafts, probs


def random_logits_processors(logits, token_ids, num_prompt_tokens, *, repetition_penalty=None,
                             frequency_penalty=None, presence_penalty=None,
                             logit_bias_ids=None, logit_bias_values=None,
                             allowed_bitmask=None, stop_token_ids=None, min_tokens=None):
    """Family ``logits-processors``: Gaussian float32 values of the logits' shape (no seed is
    passed: a fixed one); every input left as it was."""
    generator = _generator(logits.device, FIXED_SEED)
    return 4.0 * torch.randn(logits.shape, device=logits.device, generator=generator)


def _tree_step(target, tokens, parents, node, greedy, generator):
    """One step of the walk from ``node`` (int64 [B], -1 the root): (token [B], the child
    moved to or -1 where the walk ends there). Greedy rows follow the argmax (the first
    child holding it); the others move to a random child of positive target probability
    by a fair coin, or end on a skewed draw among the tokens of positive probability that
    no child holds (forced either way where one side is empty)."""
    batch, nodes = tokens.shape
    rows = torch.arange(batch, device=tokens.device)
    p = target[rows, node + 1]                                  # [B, V]
    child = (tokens >= 0) & (parents == node[:, None])
    held = torch.zeros(p.shape, dtype=torch.int64, device=p.device).scatter_reduce(
        1, tokens.clamp(min=0), child.long(), reduce="amax") > 0
    movable = child & (p.gather(1, tokens.clamp(min=0)) > 0)
    free = (p > 0) & ~held
    u = torch.rand((batch, nodes + 1), dtype=torch.float64, device=p.device,
                   generator=generator)
    pick = torch.where(movable, u[:, 1:], -1.0).argmax(dim=1)    # a random movable child
    move = movable.any(dim=1) & (~free.any(dim=1) | (u[:, 0] < 0.5))
    last = skewed(free | ~free.any(dim=1, keepdim=True), generator)
    best = p.argmax(dim=1)
    on_best = child & (tokens == best[:, None])
    move = torch.where(greedy, on_best.any(dim=1), move)
    pick = torch.where(greedy, on_best.to(torch.int8).argmax(dim=1), pick)
    token = torch.where(move, tokens[rows, pick], torch.where(greedy, best, last))
    return token, torch.where(move, pick, -1)


def random_tree_rejection(draft_token_ids, parent_ids, draft_probs, target_probs, greedy,
                          seed):
    """Family ``tree-rejection``: a random walk down the tree (``_tree_step``), each accepted
    child of positive target probability, the last token of positive probability and no
    child's token; greedy rows exact. Width D + 1, D the deepest path in the batch."""
    if draft_token_ids.shape[1] == 0:           # no nodes: one padding node to walk past
        padding = draft_token_ids.new_full((draft_token_ids.shape[0], 1), -1)
        draft_token_ids, parent_ids = padding, padding
    batch, nodes = draft_token_ids.shape
    device, generator = target_probs.device, _generator(target_probs.device, seed)
    depth = torch.zeros((batch, nodes), dtype=torch.int64, device=device)
    for i in range(nodes):
        above = depth.gather(1, parent_ids[:, i:i + 1].clamp(min=0)).squeeze(1)
        depth[:, i] = torch.where(parent_ids[:, i] < 0, 1, above + 1)
    width = int(torch.where(draft_token_ids >= 0, depth, 0).amax()) + 1 if batch else 1
    out = torch.full((batch, width), -1, dtype=torch.int64, device=device)
    node = torch.full((batch,), -1, dtype=torch.int64, device=device)
    going = torch.ones(batch, dtype=torch.bool, device=device)
    for j in range(width):
        token, child = _tree_step(target_probs, draft_token_ids, parent_ids, node, greedy,
                                  generator)
        out[:, j] = torch.where(going, token, -1)
        going &= child >= 0
        node = torch.where(going, child, node)
    return out
