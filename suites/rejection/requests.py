"""Curated request batches for family ``rejection``: the laws where rejection samplers break.

The laws of one draft position are ``position_laws``'s (harness/checks/position_laws.py).
Each builder returns a ``RejectionLaws`` (reference/rejection.py): per request, the target
and draft law at each draft position, the bonus token and the greedy flag. Heads sit at
random positions, never at token 0, so an index bug cannot hide behind symmetry.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.checks.position_laws import position_laws
from sampling_harness.reference.rejection import RejectionLaws

# Requests of the curated batch: the laws at their draft positions (empty: zero drafts),
# and whether the request is greedy (greedy rows are checked exactly by every call).
CURATED = (
    ("typical x4", ("typical",) * 4, False),
    ("weak draft x3", ("weak-draft",) * 3, False),
    ("p = q x2", ("equal", "equal"), False),
    ("near-equal x2", ("near-equal", "near-equal"), False),
    ("q mass where p has none x3", ("q-mass-where-p-has-none",) * 3, False),
    ("mixed positions", ("peaked-target", "typical", "weak-draft", "near-equal"), False),
    ("one draft", ("typical",), False),
    ("zero drafts", (), False),
    ("greedy typical x3", ("typical",) * 3, True),
)


def build(requests, vocab: int, seed: int, draft_probs: bool = True,
          fixed: bool = False) -> tuple[list[str], RejectionLaws]:
    """A ``RejectionLaws`` batch of ``requests`` ((name, position kinds, greedy) triples).

    ``fixed``: drafts chosen once, adversarially, per position in turn: a token of target
    probability 0 where there is one, the target's argmax, a token of tiny target
    probability, a uniformly random token (else drafts are drawn from q on every call).
    Without ``draft_probs`` drafts are always fixed (q is one-hot at the draft).
    """
    rng = np.random.default_rng(seed)
    targets, drafts, fixed_ids, counts, names = [], [], [], [], []
    for name, kinds, _greedy in requests:
        names.append(name)
        counts.append(len(kinds))
        for position, kind in enumerate(kinds):
            p, q = position_laws(kind, vocab, rng)
            targets.append(p)
            drafts.append(q)
            fixed_ids.append(adversarial_draft(p, q, position, rng))
    fixed = fixed or not draft_probs
    laws = RejectionLaws(
        target=np.stack(targets) if targets else np.zeros((0, vocab), np.float32),
        draft=(np.stack(drafts) if drafts else np.zeros((0, vocab), np.float32))
        if draft_probs else None,
        num_draft_tokens=tuple(counts),
        bonus=rng.integers(vocab, size=len(requests)).astype(np.int64),
        greedy=np.array([g for _, _, g in requests], dtype=bool),
        fixed_drafts=np.array(fixed_ids, dtype=np.int64) if fixed else None)
    return names, laws


def adversarial_draft(p: np.ndarray, q: np.ndarray, position: int,
                      rng: np.random.Generator) -> int:
    """A fixed draft for ``position`` (cycling through the adversarial kinds), always of
    positive draft probability so that its acceptance is defined."""
    allowed = q > 0
    kind = position % 4
    if kind == 0 and (allowed & (p == 0)).any():
        return int(rng.choice(np.flatnonzero(allowed & (p == 0))))
    if kind == 1:
        return int(np.argmax(np.where(allowed, p, -1.0)))
    if kind == 2:
        positive = np.flatnonzero(allowed & (p > 0))
        return int(positive[np.argmin(p[positive])])
    return int(rng.choice(np.flatnonzero(allowed)))


def leading(inputs: dict, n: int) -> dict:
    """The first ``n`` requests of a batch of one-draft requests: the batch itself when
    that is all of it (its draft-count list kept, not copied: the contract's validation
    holds the counts of the list it saw last, suites/rejection/contract.py)."""
    if n == len(inputs["num_draft_tokens"]):
        return inputs
    return {name: value[:n] for name, value in inputs.items()}
