"""Wrong rejection samplers, one field bug each (declared with their bugs and catching checks
by each family: suites/<family>/__init__.py).

Each is torch-rejection (kernels/rejection/torch_rejection.py) with one piece swapped, so
that everything but the bug is the clean sampler. All take the contract's arguments in
order: (draft_token_ids, num_draft_tokens, draft_probs, target_probs, bonus_token_ids,
greedy, seed).
"""

from __future__ import annotations

from functools import partial

import torch

from sampling_harness.kernels.rejection.torch_rejection import (
    Draws,
    Pieces,
    race,
    rejection_sample,
    rejection_torch,
    request_grid,
    residual,
)
from sampling_harness.kernels.sample.torch_race import seeded_generator


def draft_probs_dropped(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """The draft probabilities never reach the sampler: q is taken one-hot at the draft,
    so d is accepted with probability p(d) instead of min(1, p(d) / q(d))."""
    return rejection_torch(drafts, counts, None, target_probs, bonus, greedy, seed)


def _inverse_cdf(weights: torch.Tensor, draws: Draws) -> torch.Tensor:
    """The residual sampled by inverse CDF at the uniform that rejected the draft."""
    cdf = weights.cumsum(dim=1)
    level = (draws.uniform * cdf[:, -1])[:, None].contiguous()
    token = torch.searchsorted(cdf, level, right=True).squeeze(1)
    columns = torch.arange(weights.shape[1], device=weights.device)
    last = torch.where(weights > 0, columns, 0).max(dim=1).values
    return torch.minimum(token, last)


def shared_uniform(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """One uniform per position serves the accept test and the residual draw: given a
    rejection u >= p(d) / q(d), so the inverse CDF reaches only the residual's upper part.
    The acceptance rate stays right (the accept test is untouched); the emitted token after
    a rejection is biased, which the (accepted length, emitted token) law of ``joint`` and
    ``fixed_drafts`` sees. Field report: vllm-ascend issue 16370 (the acceptance uniform
    reused to pick the recovered token)."""
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(recover=_inverse_cdf))


def greedy_unwritten(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """Greedy rows go to a ``torch.empty`` output that only gets the accepted drafts and
    the emitted token: the slots after it keep whatever the allocator left there."""
    full = rejection_torch(drafts, counts, draft_probs, target_probs, bonus, greedy, seed)
    out = torch.empty_like(full)
    written = ~greedy[:, None] | (full >= 0)
    out[written] = full[written]
    return out


def _accept_every_draft(uniform, p_draft, q_draft):
    return torch.ones_like(uniform, dtype=torch.bool)


def accept_all(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """Every draft is accepted whatever its target probability."""
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(accept=_accept_every_draft))


def _target_as_residual(target_rows, draft_rows, draft_ids):
    return target_rows.to(torch.float64)


def residual_from_target(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """At a rejection the token is drawn from p itself, not from max(p - q, 0)."""
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(residual=_target_as_residual))


def _inverted_acceptance(uniform, p_draft, q_draft):
    return uniform * p_draft < q_draft


def ratio_inverted(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """Accept with probability min(1, q(d) / p(d)): u p(d) < q(d)."""
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(accept=_inverted_acceptance))


def _shifted_layout(num_draft_tokens, total: int, device: torch.device):
    """Starts counted as if a zero-draft request held one row: every later request reads
    its drafts and probabilities one row too far (clamped inside the buffer)."""
    counts = torch.tensor(list(num_draft_tokens), dtype=torch.int64, device=device)
    rows = counts.clamp_min(1)
    return request_grid(counts, torch.cumsum(rows, 0) - rows, total)


def zero_draft_shift(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """An off-by-one in the offsets of zero-draft requests shifts the requests after them."""
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(layout=_shifted_layout))


def _tied_choice(target: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Greedy as top-k = 1 by threshold: every token tied with the maximum is kept and
    one of them is picked at random."""
    tied = target == target.max(dim=1, keepdim=True).values
    pick = torch.rand(target.shape, generator=generator, device=target.device)
    return torch.where(tied, pick, -1.0).argmax(dim=1)


def greedy_tie_random(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """Greedy requests accept a draft iff it is the tied maximum picked at random, and emit
    that pick at a mismatch: ties are not resolved to the lowest index."""
    generator = seeded_generator(target_probs.device, seed ^ 0x5A5A5A5)
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(greedy=partial(_tied_choice, generator=generator)))


def _race_unfilled_buffer(weights: torch.Tensor, draws: Draws) -> torch.Tensor:
    return race(weights, torch.ones_like(draws.noise))


def noise_never_drawn(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """The race noise is drawn into a copy (an in-place op on an advanced-indexing
    result): the buffer raced against keeps its placeholder, here 1 everywhere, so every
    request under every seed recovers the residual's mode."""
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(recover=_race_unfilled_buffer))


def _race_float32_noise(weights: torch.Tensor, draws: Draws,
                        generator: torch.Generator) -> torch.Tensor:
    """The residual raced in float32 against float32 ``exponential_`` noise."""
    noise = torch.empty(weights.shape, dtype=torch.float32, device=weights.device)
    noise.exponential_(generator=generator)
    return race(weights.float(), noise)


def recovered_fp32_noise(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """torch-rejection whose recovered token is ``argmax w / q`` with q float32
    ``exponential_`` noise (floor 2^-24 on CUDA; the CPU's float32 noise has no floor)."""
    generator = seeded_generator(target_probs.device, seed ^ 0x3C3C3C3)
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(recover=partial(_race_float32_noise,
                                                          generator=generator)))


def _accept_half_uniform(uniform, p_draft, q_draft, generator: torch.Generator):
    """u q(d) < p(d) with u a float16 ``torch.rand``: 0 with probability about 2^-12 (seen
    on a CPU: 2.5e-4), where no correct sampler accepts a draft of p/q = 1e-5 that often."""
    u = torch.rand(uniform.shape, dtype=torch.float16, device=uniform.device,
                   generator=generator)
    return u.double() * q_draft < p_draft


def accept_half_uniform(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """torch-rejection whose acceptance uniform is a float16 ``torch.rand``."""
    generator = seeded_generator(target_probs.device, seed ^ 0x1E1E1E1)
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(accept=partial(_accept_half_uniform,
                                                         generator=generator)))


def _accept_open_uniform(uniform, p_draft, q_draft, bits: int):
    """u q(d) < p(d) with u = (k + 1) 2^-bits, k the top ``bits`` bits of the float64
    uniform: a (0, 1] uniform that never goes below 2^-bits."""
    u = (torch.floor(uniform * 2.0**bits) + 1.0) * 2.0**-bits
    return u * q_draft < p_draft


def accept_uniform_floor(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """torch-rejection whose acceptance uniform never goes below 2^-16."""
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(accept=partial(_accept_open_uniform, bits=16)))


def _accept_float32_uniform(uniform, p_draft, q_draft):
    """u q(d) < p(d) with u on float32's grid of [0, 1): k 2^-24, k the top 24 bits of the
    float64 uniform: exactly 0 with probability 2^-24, as ``torch.rand`` in float32 draws."""
    u = torch.floor(uniform * 2.0**24) * 2.0**-24
    return u * q_draft < p_draft


def accept_u_fp32(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """torch-rejection whose acceptance uniform is a float32 one (24 random bits)."""
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(accept=_accept_float32_uniform))


def _one_hot_missing_in_a_quarter(target_rows, draft_rows, draft_ids):
    """Without draft rows, q's one-hot is placed only where d mod 2048 is outside [512, 1024)
    (a chunk's second quarter compared with ``j - Q`` for ``j + Q``): there the residual
    keeps p(d)."""
    if draft_rows is not None:
        return residual(target_rows, draft_rows, draft_ids)
    p = target_rows.to(torch.float64)
    missed = (draft_ids % 2048 >= 512) & (draft_ids % 2048 < 1024)
    kept = residual(target_rows, None, draft_ids)
    return torch.where(missed[:, None], p, kept)


def one_hot_quarter_missed(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """In the path without draft probs the one-hot of q misses the drafts in one quarter of
    each 2048-column chunk, so a rejected draft there can come back as its own recovered
    token (found by ``sampling-harness mutate`` in triton-rejection: ``j - Q == d``)."""
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=Pieces(residual=_one_hot_missing_in_a_quarter))

