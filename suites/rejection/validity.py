"""Validity of family ``rejection``: exact checks, no statistics and no alpha.

Every call is validated by the runner (suites/rejection/contract.py): the shape, ids then
-1 placeholders exactly where the contract puts them, the accepted prefix equal to the
drafts, no accepted draft of target probability 0, no rejected draft with p(d) >= q(d), the
recovered token inside the residual's support, the bonus token exactly after all drafts,
greedy rows equal to the greedy output. This check adds the edge batches (T = 0, B = 1,
zero-draft requests first, middle and last, draft_probs None, V = 1 and 2, V just off the
block sizes, forced accepts and rejects), each called twice with the same seed under two
allocator poisons (identical outputs are due: an unwritten slot differs for certain), and a
large batch whose every draft has target probability 0: a kernel that accepts such a draft,
or recovers outside the residual, at any per-draft rate above the stated minimum is caught
with probability 0.99. A column sweep (``column_sweep``) puts a draft at every column of a
vocabulary spanning every quarter of a chunk (two chunks on a GPU), so a residual wrong at
some columns only is seen wherever they fall.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.reference.rejection import RejectionLaws
from sampling_harness.stats.binomial import never_rate
from sampling_harness.suites.rejection.draws import DraftSampler, batch_inputs, replicas_per_call
from sampling_harness.suites.rejection.requests import CURATED, build
from sampling_harness.verdict import Outcome

NEVER_VOCAB = 257


def forced(vocab: int, seed: int) -> RejectionLaws:
    """Drafts whose fate is certain: p one-hot at the draft (accepted), p(d) = 0 (rejected),
    p(d) >= q(d) (accepted), drafts at the first and last token of the row."""
    rng = np.random.default_rng(seed)
    target, draft, drafts = [], [], []
    for d in (0, vocab - 1, int(rng.integers(vocab))):
        hot = np.zeros(vocab, np.float32)
        hot[d] = 1.0
        q = rng.random(vocab).astype(np.float32) + 0.1
        q /= q.sum()
        zero_at_d = rng.random(vocab).astype(np.float32) + 0.1
        zero_at_d[d] = 0.0
        zero_at_d /= zero_at_d.sum()
        target += [hot, zero_at_d]
        draft += [q, q]
        drafts += [d, d]
    return RejectionLaws(target=np.stack(target), draft=np.stack(draft),
                         num_draft_tokens=(2, 2, 2), bonus=rng.integers(vocab, size=3),
                         greedy=np.array([False, True, False]),
                         fixed_drafts=np.array(drafts, dtype=np.int64))


def edge_batches(seed: int) -> dict[str, RejectionLaws]:
    typical = [r for r in CURATED if r[0] == "typical x4"]
    zero, one = ("zero drafts", (), False), ("one draft", ("typical",), False)
    greedy_zero = ("greedy, zero drafts", (), True)
    return {
        "T = 0": build([zero, zero, greedy_zero], 7, seed)[1],
        "B = 1, 4 drafts": build(typical, 33, seed)[1],
        "zero-draft requests first, middle, last": build(
            [zero, *typical, zero, one, greedy_zero], 129, seed)[1],
        "draft_probs None": build(CURATED, 129, seed, draft_probs=False)[1],
        "V = 2": build(CURATED, 2, seed)[1],
        "V = 1": build([one, ("greedy", ("equal",) * 2, True)], 1, seed)[1],
        "V = 4099, fixed drafts": build(CURATED, 4099, seed, fixed=True)[1],
        "forced accepts and rejects": forced(1031, seed),
    }


def never_batch(vocab: int, seed: int, draft_probs: bool) -> RejectionLaws:
    """Requests of one draft each, the draft of target probability 0 and draft probability
    > 0: it must be rejected, and the recovered token drawn from the residual."""
    rng = np.random.default_rng(seed)
    rows = 64
    q = rng.random((rows, vocab)).astype(np.float32) + 0.05
    q /= q.sum(1, keepdims=True)
    p = rng.random((rows, vocab)).astype(np.float32) ** 4
    drafts = rng.integers(vocab, size=rows)
    p[np.arange(rows), drafts] = 0.0
    p[rng.random((rows, vocab)) < 0.5] = 0.0
    p[np.arange(rows), (drafts + 1) % vocab] = 1.0  # a positive token in every row
    p /= p.sum(1, keepdims=True)
    return RejectionLaws(target=p.astype(np.float32), draft=q if draft_probs else None,
                         num_draft_tokens=(1,) * rows, bonus=rng.integers(vocab, size=rows),
                         greedy=np.zeros(rows, bool), fixed_drafts=drafts.astype(np.int64))


SWEEP_VOCAB = {"cpu": 1031, "cuda": 4099}    # every quarter of a chunk; two chunks on a GPU


def column_sweep(vocab: int, seed: int, draft_probs: bool) -> RejectionLaws:
    """One request per column: request d drafts token d, with p(d) = 1/2 and the rest of p
    spread. Without draft probs q is one-hot at d (accepted with probability 1/2); with them
    q(d) = 3/4 (accepted with probability 2/3). Either way the residual max(p - q, 0) is 0 at
    d, so a rejected draft must never come back as its own recovered token. A kernel whose
    residual misses d at some columns (a one-hot, an offset or a mask wrong in one quarter
    of a chunk, one tile or one split) re-emits d in about half the rejections there, which
    the runner's exact validation sees wherever those columns fall."""
    rng = np.random.default_rng(seed)
    columns = np.arange(vocab)
    p = rng.random((vocab, vocab)).astype(np.float64) + 0.05
    p[columns, columns] = 0.0
    p *= 0.5 / p.sum(1, keepdims=True)
    p[columns, columns] = 0.5
    q = None
    if draft_probs:
        q = rng.random((vocab, vocab)).astype(np.float64) + 0.05
        q[columns, columns] = 0.0
        q *= 0.25 / q.sum(1, keepdims=True)
        q[columns, columns] = 0.75
        q = q.astype(np.float32)
    return RejectionLaws(target=p.astype(np.float32), draft=q,
                         num_draft_tokens=(1,) * vocab, bonus=rng.integers(vocab, size=vocab),
                         greedy=np.zeros(vocab, bool), fixed_drafts=columns.astype(np.int64))


def validity(ctx) -> Outcome:
    seeds = ctx.seeds()
    generator = torch.Generator(device=ctx.device)
    batches = edge_batches(ctx.seed)
    for laws in batches.values():
        generator.manual_seed(next(seeds))
        drafts = DraftSampler(laws, ctx.device).draw(1, generator)
        ctx.runner.call_twice(batch_inputs(laws, drafts, 1, ctx.device), next(seeds))

    for draft_probs in (True, False):
        laws = column_sweep(SWEEP_VOCAB[ctx.device.type], ctx.seed, draft_probs)
        ctx.runner.call(batch_inputs(laws, torch.as_tensor(laws.fixed_drafts), 1, ctx.device),
                        next(seeds))  # the runner fails a rejected draft recovered as itself

    offered = 0
    for draft_probs in (True, False):
        laws = never_batch(NEVER_VOCAB, ctx.seed, draft_probs)
        copies = min(replicas_per_call(ctx, laws),
                     -(-ctx.budget.never_drafts // (2 * laws.batch)))
        inputs = batch_inputs(laws, torch.as_tensor(laws.fixed_drafts).repeat(copies), copies,
                              ctx.device)
        while offered < ctx.budget.never_drafts * (1 + (not draft_probs)) // 2:
            ctx.runner.call(inputs, next(seeds))  # the runner fails an accepted p(d) = 0
            offered += copies * laws.batch
    return Outcome(
        True, f"{ctx.runner.calls} calls valid; {len(batches)} edge batches gave the same "
              f"output under two allocator poisons; a draft at every column of V = "
              f"{SWEEP_VOCAB[ctx.device.type]} never recovered as itself; {offered:,} drafts "
              "of target probability 0 all rejected, every recovered token inside the residual",
        samples=offered, min_detectable_effect=never_rate(offered, ctx.budget.power),
        effect="per-draft rate of accepting a draft of target probability 0",
        details={"edge_batches": list(batches)})
