"""Family ``rejection``: speculative-decoding rejection sampling, greedy and probabilistic.

Contract::

    fn(draft_token_ids, num_draft_tokens, draft_probs, target_probs, bonus_token_ids,
       greedy, seed) -> int32/int64 [B, max(num_draft_tokens, default 0) + 1]

draft_token_ids int64 [T] (the drafts of all requests back to back); num_draft_tokens
list[int] of length B summing to T (zeros allowed, T may be 0); draft_probs float32 [T, V]
or None (drafts proposed deterministically: q one-hot at the draft); target_probs float32
[T, V]; bonus_token_ids int64 [B]; greedy bool [B]; seed int in [0, 2^31). Each row of the
output holds the accepted drafts, then one recovered or bonus token, then -1. A draft d is
accepted with probability min(1, p(d) / q(d)); at the first rejection a token is drawn from
the residual max(p - q, 0), normalised; after n accepted drafts the bonus token follows. A
greedy request accepts d iff d = argmax p (lowest index on ties) and emits that argmax at
the first mismatch. Same inputs and seed, same output; requests are independent.

What a seed determines (harness/seeds.py): with an int seed, request b's output
depends only on (seed, b, its own drafts, draft and target rows, bonus token and greedy
flag), not on its batch-mates (their draft counts included). A kernel whose metadata says
``"seeds": "per-request"`` also takes seed as an int64 [B] tensor on the target's device, one
seed per request in [0, 2^31) or -1 for an unseeded request: then request b's output
depends only on seed[b] and its own rows, whatever its position, the batch size and its
batch-mates; an unseeded request draws anew each call.

Read-only inputs: all of them (the target probs feed the engine's logprobs afterwards).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sampling_harness.checks.flags import Flags
from sampling_harness.errors import KernelFailure
from sampling_harness.run.guard import HeldByList


@dataclass(frozen=True)
class RejectionBudget:
    """The effects the checks of family ``rejection`` must detect (sample counts follow)."""

    name: str
    accept_shift: float        # relative drop of every acceptance probability (acceptance_length)
    joint_tv: float            # total variation of the (accepted length, token) law (laws)
    joint_vocab: int           # V of the curated joint-law requests
    marginal_tv: float         # total variation (<= 32 equal-mass bins) of a slot's token law
    marginal_vocab_cpu: int    # V of the marginal check on a CPU ...
    marginal_vocab_gpu: int    # ... and on a GPU
    generated_batches: int     # Hypothesis batches in law_generated
    generated_max_vocab: int
    never_drafts: int          # drafts of target probability 0 offered in validity
    pairs: int                 # pairs per pairing in the independence check
    tail_scales: tuple[float, ...]   # rare residual tokens' probability over the head's (tail)
    tail_expected: float       # expected rare recovered tokens per scale under H0 (tail)
    accept_ratios: tuple[float, ...]  # p(d) / q(d) of the drafts in acceptance_tail
    accept_expected: float     # expected accepted drafts per ratio under H0 ...
    accept_trials: int         # ... unless that takes more drafts than this (per ratio)
    float32_floor_rate: float | None = None   # added acceptance rate acceptance_tail must
                                              # detect at p/q = 1e-12 (a float32 uniform)
    power: float = 0.99


BUDGETS = {
    "smoke": RejectionBudget("smoke", accept_shift=0.15, joint_tv=0.12, joint_vocab=11,
                             marginal_tv=0.12, marginal_vocab_cpu=257,
                             marginal_vocab_gpu=151936, generated_batches=1,
                             generated_max_vocab=40, never_drafts=2**12, pairs=2**10,
                             tail_scales=(1e-2,), tail_expected=50.0, accept_ratios=(1e-2,),
                             accept_expected=50.0, accept_trials=2**14),
    "quick": RejectionBudget("quick", accept_shift=0.05, joint_tv=0.05, joint_vocab=11,
                             marginal_tv=0.05, marginal_vocab_cpu=257,
                             marginal_vocab_gpu=151936, generated_batches=3,
                             generated_max_vocab=40, never_drafts=2**14, pairs=2**12,
                             tail_scales=(1e-2, 1e-4, 1e-6), tail_expected=100.0,
                             accept_ratios=(1e-3, 1e-5), accept_expected=100.0,
                             accept_trials=2**22),
    "standard": RejectionBudget("standard", accept_shift=0.005, joint_tv=0.01, joint_vocab=23,
                                marginal_tv=0.01, marginal_vocab_cpu=4099,
                                marginal_vocab_gpu=151936, generated_batches=4,
                                generated_max_vocab=512, never_drafts=2**22, pairs=2**16,
                                tail_scales=(1e-2, 1e-4, 1e-6, 1e-8), tail_expected=200.0,
                                accept_ratios=(1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9),
                                accept_expected=200.0, accept_trials=2**22,
                                float32_floor_rate=2.0**-26),
    "thorough": RejectionBudget("thorough", accept_shift=0.002, joint_tv=0.005,
                                joint_vocab=23, marginal_tv=0.005, marginal_vocab_cpu=4099,
                                marginal_vocab_gpu=151936, generated_batches=8,
                                generated_max_vocab=2048, never_drafts=2**25, pairs=2**18,
                                tail_scales=(1e-2, 1e-4, 1e-6, 1e-8, 1e-10),
                                tail_expected=400.0,
                                accept_ratios=(1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10,
                                               1e-11, 1e-12),
                                accept_expected=400.0, accept_trials=2**25,
                                float32_floor_rate=2.0**-27),
}


host_counts = HeldByList(lambda counts: np.asarray(counts, dtype=np.int64).reshape(-1))
"""int64 counts of a ``num_draft_tokens`` (numpy), held for a long list while it is unchanged."""


def output_bytes(inputs: dict) -> int:
    """The bytes of an int64 output [B, max(num_draft_tokens) + 1]."""
    counts = host_counts(inputs["num_draft_tokens"])
    return 8 * counts.size * (int(counts.max(initial=0)) + 1)


def _check_layout(out: object, inputs: dict) -> torch.Tensor:
    counts = host_counts(inputs["num_draft_tokens"])
    batch, width = counts.size, int(counts.max(initial=0)) + 1
    device = inputs["target_probs"].device
    if not isinstance(out, torch.Tensor):
        raise KernelFailure(f"returned {type(out).__name__}, expected a torch.Tensor")
    if out.dtype not in (torch.int32, torch.int64):
        raise KernelFailure(f"returned dtype {out.dtype}, expected torch.int32 or torch.int64")
    if tuple(out.shape) != (batch, width):
        raise KernelFailure(f"returned shape {tuple(out.shape)}, expected ({batch}, {width})")
    if out.device != device:
        raise KernelFailure(f"returned output on {out.device}, expected {device}")
    return out.long()


def validate_output(out: object, inputs: dict) -> torch.Tensor:
    """Check a ``rejection`` kernel's output exactly against its inputs; return it as int64.

    Every condition holds for certain under the contract, whatever the random draws:
    a tensor [B, K + 1] of int32/int64 on the device; each row a run of ids in [0, V)
    followed by -1 placeholders only; at most n + 1 ids (A <= n accepted drafts and one
    emitted token); the accepted prefix equal to the request's drafts; no accepted draft of
    target probability 0, and no draft rejected whose target probability is at least its
    draft probability (q = 1 without draft probs); the bonus token exactly when all n
    drafts are accepted; a recovered token in the residual's support (p - q > 0, or p > 0
    where the residual is empty); greedy requests equal to the greedy output exactly.

    Two host synchronisations (harness/checks/flags.py): the row's structure and prefix,
    then the emitted token; a third only where a recovered token needs the residual's mass.
    """
    out = _check_layout(out, inputs)
    target, drafts, bonus, greedy = (inputs["target_probs"], inputs["draft_token_ids"],
                                     inputs["bonus_token_ids"], inputs["greedy"])
    device, width, vocab = out.device, out.shape[1], target.shape[1]
    counts = torch.from_numpy(host_counts(inputs["num_draft_tokens"])).to(device)
    starts = torch.cumsum(counts, 0) - counts
    slots = torch.arange(width, device=device)
    written = out >= 0
    length = written.sum(1)
    prefix = slots[None, :] < length[:, None]
    flags = Flags()
    flags.add(((written != prefix) | (~prefix & (out != -1))).any(1),
              lambda b: f"row {out[b].tolist()} is not ids followed by -1 placeholders")
    flags.add(length == 0, lambda b: "no emitted token (the row is all -1)")
    flags.add((out >= vocab).any(1), lambda b: f"row {out[b].tolist()} holds an id >= V = {vocab}")
    accepted = (length - 1).clamp(min=0)          # gathered with before the flags are read
    flags.add(length - 1 > counts, lambda b: f"{int(accepted[b])} tokens before the emitted "
                                             f"one, but only {int(counts[b])} drafts")
    rows = (starts[:, None] + slots[None, :]).clamp(max=max(drafts.numel() - 1, 0))
    in_prefix = slots[None, :] < accepted[:, None]
    if drafts.numel():
        expected = torch.where(in_prefix, drafts[rows], -1)
        flags.add((in_prefix & (out != expected)).any(1),
                  lambda b: f"accepted prefix {out[b, :int(accepted[b])].tolist()} differs "
                            f"from the drafts {expected[b, :int(accepted[b])].tolist()}")
        p_draft = target[rows, drafts[rows]]
        flags.add((in_prefix & (p_draft <= 0)).any(1),
                  lambda b: "accepted a draft of target probability 0")
    emitted = out.gather(1, accepted[:, None]).squeeze(1)
    full = accepted == counts
    flags.add(full & (emitted != bonus),
              lambda b: f"accepted all {int(counts[b])} drafts but emitted {int(emitted[b])}, "
                        f"not the bonus token {int(bonus[b])}")
    any_greedy = flags.any(greedy)
    answers = flags.raise_first()
    _validate_emitted(out, inputs, accepted, emitted, starts, counts, answers[any_greedy])
    return out


def _validate_emitted(out, inputs, accepted, emitted, starts, counts, any_greedy):
    """The emitted token of requests that stopped early, and the greedy rows exactly. The
    recovered token y is in the residual's support where p(y) > q(y); elsewhere only if the
    residual max(p - q, 0) is empty and p(y) > 0: that mass is read (a row pair a request)
    only for the requests where it decides."""
    target, draft, drafts, bonus, greedy = (
        inputs["target_probs"], inputs["draft_probs"], inputs["draft_token_ids"],
        inputs["bonus_token_ids"], inputs["greedy"])
    flags = Flags()
    if drafts.numel():
        stopped = (accepted < counts) & ~greedy
        t = (starts + accepted.clamp(max=counts - 1).clamp(min=0)).clamp(max=drafts.numel() - 1)
        d, y = drafts[t], emitted
        p_y, p_d = target[t, y], target[t, d]
        if draft is not None:
            q_y, q_d = draft[t, y], draft[t, d]
        else:  # q one-hot at the draft
            q_y, q_d = (y == d).to(p_y.dtype), torch.ones_like(p_d)
        flags.add(stopped & (p_d >= q_d) & (q_d > 0),
                  lambda b: f"rejected draft {int(drafts[t[b]])} at position {int(accepted[b])} "
                            f"though p(d) >= q(d)")
        doubt = stopped & ~(p_y > q_y)            # in the support only if the residual is empty
        outside = flags.any(doubt)
    if any_greedy:
        expected = greedy_rows(target, drafts, counts, bonus, out.shape[1])
        greedy_wrong = greedy & (out != expected).any(1)
    answers = flags.raise_first()
    if drafts.numel() and answers[outside]:
        index = doubt.nonzero().squeeze(1)
        rows, p_y, y, d = t[index], p_y[index], y[index], d[index]
        if draft is not None:
            residual_mass = (target[rows] > draft[rows]).any(1)
        else:  # the residual is p without the draft
            residual_mass = (target[rows] > 0).sum(1) > (target[rows, d] > 0).long()
        wrong = torch.zeros_like(doubt)
        wrong[index] = residual_mass | (p_y <= 0)
        flags.add(wrong, lambda b: f"recovered token {int(emitted[b])} at position "
                                   f"{int(accepted[b])} lies outside the residual max(p - q, 0)")
    if any_greedy:
        flags.add(greedy_wrong,
                  lambda b: f"greedy row {out[b].tolist()}, expected {expected[b].tolist()}")
    flags.raise_first()


def greedy_rows(target: torch.Tensor, drafts: torch.Tensor, counts: torch.Tensor,
                bonus: torch.Tensor, width: int) -> torch.Tensor:
    """The greedy output of every request (as if all were greedy), int64 [B, width]: accept
    while the draft equals argmax p (torch.argmax returns the first maximum), then emit the
    argmax at the first mismatch, or the bonus after all n."""
    device, batch = target.device, counts.numel()
    starts = torch.cumsum(counts, 0) - counts
    slots = torch.arange(width, device=device)
    out = torch.full((batch, width), -1, dtype=torch.int64, device=device)
    best = target.argmax(1) if target.shape[0] else drafts
    rows = (starts[:, None] + slots[None, :]).clamp(max=max(drafts.numel() - 1, 0))
    valid = slots[None, :] < counts[:, None]
    match = valid & (drafts[rows] == best[rows]) if drafts.numel() else valid
    accepted = torch.where(valid & ~match, slots[None, :], width).min(1).values
    accepted = torch.minimum(accepted, counts)
    take = slots[None, :] < accepted[:, None]
    if drafts.numel():
        out = torch.where(take, drafts[rows], out)
        emit = torch.where(accepted < counts, best[rows.gather(1, accepted.clamp(
            max=width - 1)[:, None]).squeeze(1)], bonus)
    else:
        emit = bonus
    return out.scatter(1, accepted[:, None], emit[:, None])


def bench_batch(shape: str, device: torch.device) -> dict:
    """``BxKxV``: B requests of K drafts over V tokens. Draft laws u^4 (normalised); target
    laws the draft's tilted by exp(N(0, 1)) (acceptance about one half); drafts drawn from
    q; every fourth request greedy."""
    batch, drafts_per, vocab = (int(x) for x in shape.lower().split("x"))
    total = batch * drafts_per
    q = torch.rand(total, vocab, device=device).pow_(4)
    q /= q.sum(1, keepdim=True)
    p = q * torch.randn(total, vocab, device=device).exp_()
    p /= p.sum(1, keepdim=True)
    return {"draft_token_ids": torch.multinomial(q, 1).squeeze(1),
            "num_draft_tokens": [drafts_per] * batch, "draft_probs": q, "target_probs": p,
            "bonus_token_ids": torch.randint(vocab, (batch,), device=device),
            "greedy": torch.arange(batch, device=device) % 4 == 3}
