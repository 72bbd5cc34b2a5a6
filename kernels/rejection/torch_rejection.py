"""torch-rejection: speculative-decoding rejection sampling in plain torch, as engines write it
(but for its draws: a counter-based stream per request, where engines keep a generator).

Vectorised over requests and positions (no Python loop over either). Request b owns the
draft rows t = s_b + i, i < n_b (s_b the exclusive cumulative sum of the draft counts).

* Draws, from one counter-based stream per request (kernels/counter_uniforms.py: keyed by
  (seed, b) for an int seed, by its own seed s_b per request, fresh for an unseeded one), so
  a request's draws never depend on its batch-mates: u_{b,i} in (0, 1) in float64 (53 bits)
  for each of its positions i < n_b, and, only for a probabilistic request that rejects,
  e_{b,v} = -log u'_{b,v} ~ Exp(1) in float64 for each token v of positive residual weight
  (the only tokens that race: the draws are the same whoever else is in the batch).
* Acceptance: a probabilistic request accepts d_t iff u_t q_t(d_t) < p_t(d_t) in float64
  (q = 1 without draft probs); a greedy one iff d_t = argmax p_t (the first maximum).
* First rejection: A_b = the number of leading accepted positions (a cumulative product of
  the acceptance flags over the request's positions), n_b if all are accepted.
* Recovered token at A_b < n_b: argmax_v w(v) / e_{b,v} over the residual
  w = max(p - q, 0) in float64 (q one-hot at the draft without draft probs; p itself in the
  out-of-contract case of an empty residual); tokens of weight 0 score -1 and never win.
  A greedy request emits argmax p at A_b; at A_b = n_b the bonus token follows.
* Assembly: slot j holds d_{s_b + j} for j < A_b, the emitted token at j = A_b, -1 after.

Each step is a small function; ``Pieces`` names them so that a variant (the mutants in
kernels/mutants/rejection_mutants.py) can swap one piece and keep the rest.

Memory traffic: two gathered probabilities per draft row; a greedy batch reads the target
rows once for their argmax; one residual row pair (p, q) per rejecting probabilistic
request (R of the B) gathered and raced: about 6 passes over R x V in 8-byte words, and the
noise at the M tokens of positive residual (about 10 passes of int64 temporaries of M, M
about half of R x V on typical laws).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from sampling_harness.kernels.counter_uniforms import request_keys, uniforms
from sampling_harness.kernels.meta import per_request_seeds


class Layout(NamedTuple):
    """Where each request's drafts lie in the flat [T] / [T, V] inputs."""

    counts: torch.Tensor   # int64 [B]: n_b
    starts: torch.Tensor   # int64 [B]: s_b, the first draft row of request b
    rows: torch.Tensor     # int64 [B, K]: s_b + i, clamped into [0, T) (T > 0)
    valid: torch.Tensor    # bool [B, K]: i < n_b


class Draws(NamedTuple):
    """The random numbers of the R requests that race their residual (rejected at A < n)."""

    uniform: torch.Tensor  # float64 [R]: u at row s_b + A, the uniform that rejected
    noise: torch.Tensor    # float64 [R, V]: Exp(1) noise of the residual race (1 where the
    #                        residual is 0: those tokens never race)


NOISE_INDEX = 2**20    # stream draws of the residual noise: NOISE_INDEX + v (positions < 2^20)


def counter_draws(seed, layout: Layout, device: torch.device):
    """(u float64 [T], noise(requests, weights) -> float64 [R, V]): request b's uniform at
    position i is draw i of its stream, its residual noise for token v is -log of draw
    NOISE_INDEX + v (kernels/counter_uniforms.py: a stream per request, keyed by (seed, b) or
    its own seed); ``noise`` draws it for the R ``requests`` at the tokens of positive
    ``weights`` only, and holds 1 (never raced) at the others."""
    batch = layout.counts.numel()
    keys = request_keys(seed, batch, device)
    owner = torch.repeat_interleave(torch.arange(batch, device=device), layout.counts)
    position = torch.arange(owner.numel(), device=device) - layout.starts[owner]
    uniform = uniforms(keys[owner], position)

    def noise(requests: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        rows, tokens = (weights > 0).nonzero(as_tuple=True)
        drawn = torch.ones_like(weights)
        drawn[rows, tokens] = -torch.log(uniforms(keys[requests[rows]], NOISE_INDEX + tokens))
        return drawn

    return uniform, noise


def draft_layout(num_draft_tokens, total: int, device: torch.device) -> Layout:
    """Counts, exclusive cumulative starts, and the [B, K] grid of draft rows."""
    counts = torch.from_numpy(np.asarray(num_draft_tokens, dtype=np.int64).reshape(-1)).to(device)
    starts = torch.cumsum(counts, 0) - counts
    return request_grid(counts, starts, total)


def request_grid(counts: torch.Tensor, starts: torch.Tensor, total: int) -> Layout:
    """The layout of requests with ``counts`` drafts from rows ``starts`` on."""
    width = int(counts.max()) if counts.numel() else 0
    slots = torch.arange(width, device=counts.device)
    rows = (starts[:, None] + slots[None, :]).clamp(0, max(total - 1, 0))
    return Layout(counts, starts, rows, slots[None, :] < counts[:, None])


def acceptance(uniform: torch.Tensor, p_draft: torch.Tensor, q_draft: torch.Tensor
               ) -> torch.Tensor:
    """bool [T]: u q(d) < p(d), all float64: probability min(1, p(d) / q(d)); p(d) = 0
    never accepts, p(d) >= q(d) always does."""
    return uniform * q_draft < p_draft


def greedy_choice(target: torch.Tensor) -> torch.Tensor:
    """int64 [T]: argmax p per row, the lowest index among tied maxima (torch.argmax
    returns the first maximum)."""
    return target.argmax(dim=1)


def first_rejection(accepted: torch.Tensor, layout: Layout) -> torch.Tensor:
    """int64 [B]: A = the number of leading accepted drafts of each request (n if none is
    rejected): the cumulative product of the flags along the request's positions."""
    if accepted.numel() == 0:
        return torch.zeros_like(layout.counts)
    flags = accepted[layout.rows] & layout.valid
    return flags.to(torch.int64).cumprod(dim=1).sum(dim=1)


def residual(target_rows: torch.Tensor, draft_rows: torch.Tensor | None,
             draft_ids: torch.Tensor) -> torch.Tensor:
    """float64 [R, V]: max(p - q, 0) of the float32 values upcast (q one-hot at the draft
    without draft rows); p itself where that has no mass (outside the contract)."""
    p = target_rows.to(torch.float64)
    if draft_rows is None:
        excess = p.clone()
        at_draft = excess.gather(1, draft_ids[:, None])
        excess.scatter_(1, draft_ids[:, None], (at_draft - 1.0).clamp_min(0.0))
    else:
        excess = (p - draft_rows.to(torch.float64)).clamp_min(0.0)
    empty = ~(excess > 0).any(dim=1, keepdim=True)
    return torch.where(empty, p, excess)


def race(weights: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """int64 [R]: argmax_v w(v) / e_v with e ~ Exp(1), token v with probability
    w(v) / sum w. Zero weights score -1 (never NaN, never a winner)."""
    scores = torch.where(weights > 0, weights / noise, -1.0)
    return scores.argmax(dim=1)


def recovered_tokens(weights: torch.Tensor, draws: Draws) -> torch.Tensor:
    """int64 [R]: the residual race of each request with its own noise row."""
    return race(weights, draws.noise)


def assemble(drafts: torch.Tensor, layout: Layout, stop: torch.Tensor,
             emitted: torch.Tensor) -> torch.Tensor:
    """int64 [B, K + 1]: drafts before slot A, the emitted token at A, -1 after."""
    batch, width = layout.counts.numel(), layout.rows.shape[1] + 1
    slots = torch.arange(width, device=stop.device)
    out = torch.full((batch, width), -1, dtype=torch.int64, device=stop.device)
    if drafts.numel():
        prefix = slots[None, :-1] < stop[:, None]
        out[:, :-1] = torch.where(prefix, drafts[layout.rows], -1)
    return out.scatter_(1, stop[:, None], emitted[:, None])


@dataclass(frozen=True)
class Pieces:
    """The swappable steps of the sampler (the defaults make ``rejection_torch``)."""

    layout: Callable = draft_layout
    draws: Callable = counter_draws   # (seed, layout, device) -> (u [T], noise(requests, w))
    accept: Callable = acceptance
    greedy: Callable = greedy_choice
    first_rejection: Callable = first_rejection
    residual: Callable = residual
    recover: Callable = recovered_tokens
    assemble: Callable = assemble


def rejection_sample(draft_token_ids, num_draft_tokens, draft_probs, target_probs,
                     bonus_token_ids, greedy, seed, pieces: Pieces = Pieces()
                     ) -> torch.Tensor:
    """Family ``rejection`` built from ``pieces``: int64 [B, max(num_draft_tokens) + 1]."""
    device, total = target_probs.device, target_probs.shape[0]
    layout = pieces.layout(num_draft_tokens, total, device)
    uniform, noise_of = pieces.draws(seed, layout, device)
    drafts = draft_token_ids.to(torch.int64)
    bonus = bonus_token_ids.to(torch.int64)
    if total == 0 or layout.rows.shape[1] == 0:
        return pieces.assemble(drafts, layout, torch.zeros_like(layout.counts), bonus)

    p_draft = target_probs.gather(1, drafts[:, None]).squeeze(1).to(torch.float64)
    q_draft = (torch.ones_like(p_draft) if draft_probs is None
               else draft_probs.gather(1, drafts[:, None]).squeeze(1).to(torch.float64))
    accepted = pieces.accept(uniform, p_draft, q_draft)
    owner_greedy = torch.repeat_interleave(greedy, layout.counts, output_size=total)
    best = pieces.greedy(target_probs) if bool(greedy.any()) else None
    if best is not None:
        accepted = torch.where(owner_greedy, drafts == best, accepted)
    stop = pieces.first_rejection(accepted, layout)

    rejected = stop < layout.counts
    at = layout.rows.gather(1, stop.clamp(max=layout.rows.shape[1] - 1)[:, None]).squeeze(1)
    emitted = bonus.clone()
    racing = (rejected & ~greedy).nonzero().squeeze(1)   # the R requests that recover a token
    if racing.numel():
        rows = at[racing]
        weights = pieces.residual(target_probs[rows], None if draft_probs is None
                                  else draft_probs[rows], drafts[rows])
        draws = Draws(uniform[rows], noise_of(racing, weights))
        emitted[racing] = pieces.recover(weights, draws)
    if best is not None:
        emitted = torch.where(rejected & greedy, best[at], emitted)
    return pieces.assemble(drafts, layout, stop, emitted)


@per_request_seeds
def rejection_torch(draft_token_ids: torch.Tensor, num_draft_tokens, draft_probs,
                    target_probs: torch.Tensor, bonus_token_ids: torch.Tensor,
                    greedy: torch.Tensor, seed) -> torch.Tensor:
    """Family ``rejection``: int64 [B, K + 1], K = max(num_draft_tokens, default 0)."""
    return rejection_sample(draft_token_ids, num_draft_tokens, draft_probs, target_probs,
                            bonus_token_ids, greedy, seed)
