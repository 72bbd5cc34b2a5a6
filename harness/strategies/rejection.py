"""Hypothesis strategies for family ``rejection``: ragged batches of target and draft laws.

Composed from small named pieces: how many drafts each request has (zeros anywhere), which
requests are greedy, the (p, q) pair at each draft position (of a named kind), and, for
fixed drafts, which token is offered (adversarially). Rows are built by numpy from drawn
shapes and seeds (harness/strategies/probs.py). Every batch is inside the contract:

* every float32 row is finite, >= 0, sums to 1 within 1e-5 and has a positive entry;
* where rejection is possible the residual max(p - q, 0) has mass (a pair with q > p
  somewhere and p > q nowhere, only possible through float32 rounding, is repaired to
  q = p; without draft rows, a target with mass only at d is one-hot at d);
* fixed drafts have q(d) > 0 when draft rows are given; bonus ids lie in [0, V).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from sampling_harness.reference.rejection import RejectionLaws
from sampling_harness.strategies.probs import normalised, probs_rows, row_seeds, vocab_sizes

LAW_KINDS = ("independent", "equal", "near-equal", "q-mass-where-p-has-none", "p-zeros",
             "ties", "one-hot")
DRAFT_CHOICES = ("p-zero", "tiny", "argmax", "tie", "random")


def draft_counts(max_batch: int, max_drafts: int) -> st.SearchStrategy[list[int]]:
    """Drafts per request: 1..max_batch requests of 0..max_drafts drafts, zeros anywhere;
    all-zero and all-full batches get their own branches."""
    sizes = st.integers(1, max_batch)
    return st.one_of(st.lists(st.integers(0, max_drafts), min_size=1, max_size=max_batch),
                     sizes.map(lambda b: [0] * b), sizes.map(lambda b: [max_drafts] * b))


def greedy_mixes(batch: int) -> st.SearchStrategy[np.ndarray]:
    """bool [batch]: none greedy, all greedy, or a mix."""
    return st.one_of(st.just([False] * batch), st.just([True] * batch),
                     st.lists(st.booleans(), min_size=batch, max_size=batch)).map(
        lambda flags: np.array(flags, dtype=bool))


def relative_perturbations() -> st.SearchStrategy[float]:
    """Relative size of the near-equal perturbation of q: 1e-6 .. 1e-3, log-uniform."""
    return st.floats(-6.0, -3.0).map(lambda e: 10.0 ** e)


def _without_top(p: np.ndarray, rng: np.random.Generator, share: float) -> np.ndarray:
    """bool [V]: a random ``share`` of the tokens (at least one), never the argmax of p."""
    top = int(np.argmax(p))
    chosen = rng.random(len(p)) < share
    chosen[(top + rng.integers(1, len(p))) % len(p)] = True
    chosen[top] = False
    return chosen


def pair_of_kind(kind: str, p: np.ndarray, q: np.ndarray, rng: np.random.Generator,
                 scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(p, q) of ``kind`` built from two float32 rows p, q (``scale``: near-equal size)."""
    vocab = len(p)
    p64, q64 = p.astype(np.float64), q.astype(np.float64)
    if kind == "independent":
        return p, q
    if kind == "equal":
        return p, p.copy()
    if kind == "near-equal":
        return p, normalised(p64 * (1.0 + scale * rng.standard_normal(vocab)))
    if kind == "q-mass-where-p-has-none":
        zero = _without_top(p, rng, rng.uniform(0.1, 0.9))
        return (normalised(np.where(zero, 0.0, p64)),
                normalised(np.where(zero, np.maximum(q64, 1.0 / vocab), q64)))
    if kind == "p-zeros":  # a top-k style mask: p lives on 1..8 tokens, never on all
        keep = np.arange(vocab) == np.argmax(p)
        keep[rng.permutation(np.flatnonzero(~keep))[:rng.integers(0, min(vocab - 1, 8))]] = True
        return normalised(np.where(keep, p64, 0.0)), q
    if kind == "ties":
        tied = rng.choice(vocab, size=rng.integers(2, min(vocab, 4) + 1), replace=False)
        p64[tied] = p64.max()
        return normalised(p64), q
    if kind == "one-hot":
        hot = np.zeros(vocab, np.float32)
        hot[rng.integers(vocab)] = 1.0
        other = np.roll(hot, rng.integers(1, vocab))
        return hot, (hot.copy(), other, q)[rng.integers(3)]
    raise ValueError(f"unknown law kind {kind!r}")


def residual_possible(p: np.ndarray, q: np.ndarray) -> bool:
    """The pair is inside the contract for drafts drawn from q (and for any fixed draft):
    if some q(x) > p(x) (rejection possible), some p(y) > q(y) (the residual has mass)."""
    return not (q > p).any() or bool((p > q).any())


def repaired(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, q), or (p, p) where float32 rounding left rejection without a residual."""
    return (p, q) if residual_possible(p, q) else (p, p.copy())


@st.composite
def law_pairs(draw, vocab: int, kinds=LAW_KINDS) -> tuple[np.ndarray, np.ndarray]:
    """(p_row, q_row): float32 target and draft rows of one draft position, of a named kind,
    repaired to have a residual wherever rejection is possible."""
    kind = draw(st.sampled_from(kinds))
    p, q = draw(probs_rows(vocab)), draw(probs_rows(vocab))
    rng, scale = draw(row_seeds()), draw(relative_perturbations())
    return repaired(*pair_of_kind(kind, p, q, rng, scale))


def fixed_draft_choices() -> st.SearchStrategy[str]:
    """Which token a fixed draft offers: one the target never emits, the target's least
    likely one, its argmax, the last of a tie at its maximum, or any."""
    return st.sampled_from(DRAFT_CHOICES)


def choose_draft(choice: str, p: np.ndarray, q: np.ndarray | None,
                 rng: np.random.Generator) -> int:
    """The fixed draft of ``choice`` among tokens with q > 0 (every token without q);
    falls back to a uniform allowed token where the choice does not exist."""
    allowed = np.ones(len(p), bool) if q is None else q > 0
    candidates = {
        "p-zero": allowed & (p == 0),
        "tiny": allowed & (p > 0) & (p == np.min(p, where=allowed & (p > 0), initial=np.inf)),
        "argmax": allowed & (p == np.max(p, where=allowed, initial=-1.0)),
        "tie": allowed & (p == np.max(p, where=allowed, initial=-1.0)),
    }.get(choice, allowed)
    if not candidates.any():
        candidates = allowed
    tokens = np.flatnonzero(candidates)
    if choice == "tie":
        return int(tokens[-1])
    if choice in ("argmax", "tiny"):
        return int(tokens[0])
    return int(rng.choice(tokens))


def one_hot_fallback(p: np.ndarray, draft: int) -> np.ndarray:
    """Without draft rows, rejection at d (p(d) < 1) needs mass off d: else p is one-hot."""
    if p[draft] < 1 and not np.delete(p, draft).any():
        p = np.zeros_like(p)
        p[draft] = 1.0
    return p


@st.composite
def rejection_laws(draw, max_batch: int = 8, max_drafts: int = 6, max_vocab: int = 4097,
                   drafted: bool = True, with_draft_probs: bool | None = True) -> RejectionLaws:
    """A batch inside the contract. ``drafted``: the harness draws drafts from q on every
    call (needs draft rows); else fixed adversarial drafts. ``with_draft_probs``: give the
    draft rows (True), not (False: q one-hot at the draft), or either (None)."""
    if drafted and with_draft_probs is False:
        raise ValueError("drafts drawn from q need draft probs")
    given = with_draft_probs if with_draft_probs is not None else (
        drafted or draw(st.booleans()))
    vocab = draw(vocab_sizes(max_vocab))
    counts = draw(draft_counts(max_batch, max_drafts))
    greedy = draw(greedy_mixes(len(counts)))
    pairs = [draw(law_pairs(vocab)) for _ in range(sum(counts))]
    rng = draw(row_seeds())
    target = [p for p, _ in pairs]
    draft = [q for _, q in pairs] if given else None
    fixed = None
    if not drafted:
        choices = [draw(fixed_draft_choices()) for _ in pairs]
        fixed = [choose_draft(c, p, q if given else None, rng)
                 for c, (p, q) in zip(choices, pairs, strict=True)]
        if not given:
            target = [one_hot_fallback(p, d) for p, d in zip(target, fixed, strict=True)]

    def table(rows):
        return np.stack(rows) if rows else np.zeros((0, vocab), np.float32)

    return RejectionLaws(
        target=table(target), draft=None if draft is None else table(draft),
        num_draft_tokens=tuple(counts), bonus=rng.integers(vocab, size=len(counts)),
        greedy=greedy, fixed_drafts=None if fixed is None else np.array(fixed, np.int64))
