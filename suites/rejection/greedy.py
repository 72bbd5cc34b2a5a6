"""Greedy requests of family ``rejection``: exact, compared with the float64 reference.

A greedy request accepts draft d_i iff d_i = argmax p_i, the lowest index on ties, and at
the first mismatch emits that argmax; after n matches, the bonus token. The output is a
function of the inputs alone, so every greedy row must equal the reference's
(reference/rejection.py ``greedy_output``) exactly (harness/checks/greedy.py), in batches
where greedy and random requests are mixed, with draft probs and without, with zero-draft
requests, and with exact ties at the maximum (drafts at each tied token: only the lowest
index is accepted). Each batch is called twice under two allocator poisons, as in validity.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.greedy import greedy_equal
from sampling_harness.reference.rejection import RejectionLaws, greedy_output
from sampling_harness.suites.rejection.draws import batch_inputs
from sampling_harness.suites.rejection.requests import CURATED, build
from sampling_harness.verdict import Outcome


def tied_batch(vocab: int, seed: int, greedy_every: int) -> RejectionLaws:
    """Rows with 2 or 3 tokens tied at the maximum; drafts at a tied token, the argmax or a
    random token; request b greedy when b % greedy_every == 0; counts 0..4."""
    rng = np.random.default_rng(seed)
    counts = tuple(int(c) for c in rng.integers(0, 5, size=24))
    total = sum(counts)
    target = rng.random((total, vocab)).astype(np.float32) * 0.5
    drafts = np.empty(total, np.int64)
    for t in range(total):
        tied = rng.choice(vocab, size=int(rng.integers(2, 4)), replace=False)
        target[t, tied] = 1.0
        kind = rng.integers(3)
        drafts[t] = (tied.min() if kind == 0 else rng.choice(tied) if kind == 1
                     else rng.integers(vocab))
    target /= target.sum(1, keepdims=True)
    draft = rng.random((total, vocab)).astype(np.float32) + 0.01
    draft /= draft.sum(1, keepdims=True)
    return RejectionLaws(target=target.astype(np.float32), draft=draft.astype(np.float32),
                         num_draft_tokens=counts, bonus=rng.integers(vocab, size=len(counts)),
                         greedy=np.arange(len(counts)) % greedy_every == 0,
                         fixed_drafts=drafts)


def batches(seed: int) -> dict[str, RejectionLaws]:
    all_greedy = [(name, kinds, True) for name, kinds, _ in CURATED]
    no_probs = build(all_greedy, 257, seed + 2, draft_probs=False)[1]
    return {"ties, all greedy": tied_batch(37, seed, 1),
            "ties, greedy and random mixed": tied_batch(1031, seed + 1, 2),
            "curated, all greedy, no draft probs": no_probs,
            "curated, mixed, fixed drafts": build(CURATED, 129, seed + 3, fixed=True)[1]}


def greedy(ctx) -> Outcome:
    """Every greedy request of ``batches`` equals the reference's ``greedy_output``."""

    def compared(name: str, laws: RejectionLaws):
        def expected(b: int, width: int) -> np.ndarray:
            target, _, fixed, bonus, _ = laws.request(b)
            return greedy_output(target, fixed, bonus, width)

        inputs = batch_inputs(laws, torch.as_tensor(laws.fixed_drafts), 1, ctx.device)
        return name, inputs, np.flatnonzero(laws.greedy), expected

    return greedy_equal(ctx, (compared(name, laws) for name, laws in batches(ctx.seed).items()))
