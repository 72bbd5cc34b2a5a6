"""The exact law of a speculative-decoding rejection sampler's output, in float64.

One request has n drafts d_0..d_{n-1}, target rows p_i and draft rows q_i (float32, as the
kernel saw them, upcast to float64 here and never renormalised for the acceptance test).
Left to right, d_i is accepted iff ``u q_i(d_i) < p_i(d_i)`` with u ~ Uniform[0, 1), i.e.
with probability min(1, p_i(d_i) / q_i(d_i)); at the first rejection A a token is drawn
from the residual max(p_A - q_A, 0) / sum(max(p_A - q_A, 0)); if all n are accepted (A = n)
the bonus token follows. Without draft rows, q_i is one-hot at d_i (so p/q = p(d)).

Drafts are either given (fixed) or drawn from q_i / sum(q_i) (the harness draws them, in
float64). With Q = sum q_i and P = sum p_i, the token in slot i then has law
min(p, q) / Q + (1 - S / Q) max(p - q, 0) / R (S = sum min(p, q), R = P - S), which is
exactly p_i / P when P = Q, and within total variation |P - Q| / P of it otherwise (float32
row sums differ from 1 by about 1e-7).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class RejectionLaws:
    """A batch of requests in numpy, back to back as the contract lays them out.

    ``target`` float32 [T, V]; ``draft`` float32 [T, V] or None (q one-hot at the draft);
    ``num_draft_tokens`` (n_0, ..., n_{B-1}) summing to T; ``bonus`` int64 [B]; ``greedy``
    bool [B]; ``fixed_drafts`` int64 [T], or None when the harness draws the drafts from
    ``draft`` on every call (required when ``draft`` is None).
    """

    target: np.ndarray
    draft: np.ndarray | None
    num_draft_tokens: tuple[int, ...]
    bonus: np.ndarray
    greedy: np.ndarray
    fixed_drafts: np.ndarray | None = None

    def __post_init__(self):
        rows = sum(self.num_draft_tokens)
        if self.target.ndim != 2 or self.target.shape[0] != rows:
            raise ValueError(f"target has shape {self.target.shape}, expected ({rows}, V)")
        if self.draft is not None and self.draft.shape != self.target.shape:
            raise ValueError(f"draft has shape {self.draft.shape}, target {self.target.shape}")
        if self.draft is None and self.fixed_drafts is None:
            raise ValueError("without draft probs the drafts must be fixed")
        if self.fixed_drafts is not None and self.fixed_drafts.shape != (rows,):
            raise ValueError(f"fixed_drafts has shape {self.fixed_drafts.shape}, expected "
                             f"({rows},)")
        if self.bonus.shape != (self.batch,) or self.greedy.shape != (self.batch,):
            raise ValueError("bonus and greedy need one entry per request")

    @property
    def batch(self) -> int:
        return len(self.num_draft_tokens)

    @property
    def vocab(self) -> int:
        return self.target.shape[1]

    @property
    def offsets(self) -> np.ndarray:
        """int64 [B + 1]: request b owns rows offsets[b] .. offsets[b + 1] - 1."""
        return np.concatenate([[0], np.cumsum(self.num_draft_tokens, dtype=np.int64)])

    def request(self, b: int) -> tuple:
        """(target [n, V], draft [n, V] or None, fixed drafts [n] or None, bonus, greedy)."""
        start, stop = self.offsets[b], self.offsets[b + 1]
        draft = None if self.draft is None else self.draft[start:stop]
        fixed = None if self.fixed_drafts is None else self.fixed_drafts[start:stop]
        return (self.target[start:stop], draft, fixed, int(self.bonus[b]),
                bool(self.greedy[b]))

    def draw_drafts(self, rng: np.random.Generator) -> np.ndarray:
        """int64 [T]: the fixed drafts, or one draw per row from draft / sum(draft) by the
        inverse CDF in float64 (a token of draft probability 0 is never drawn)."""
        if self.fixed_drafts is not None:
            return self.fixed_drafts.astype(np.int64)
        cdf = np.cumsum(self.draft.astype(np.float64), axis=1)
        u = rng.random(cdf.shape[0]) * cdf[:, -1]
        last = self.vocab - 1 - np.argmax(self.draft[:, ::-1] > 0, axis=1)
        return np.minimum((cdf <= u[:, None]).sum(axis=1), last).astype(np.int64)

    def replicate(self, copies: int) -> RejectionLaws:
        """The whole batch ``copies`` times over: requests ordered batch, batch, batch..."""
        def tile(array):
            return None if array is None else np.tile(array, (copies,) + (1,) * (array.ndim - 1))

        return RejectionLaws(tile(self.target), tile(self.draft),
                             tuple(self.num_draft_tokens) * copies, tile(self.bonus),
                             tile(self.greedy), tile(self.fixed_drafts))


def _f64(array) -> np.ndarray:
    return np.asarray(array, dtype=np.float64)


def _one_hot(tokens: np.ndarray, vocab: int) -> np.ndarray:
    hot = np.zeros((len(tokens), vocab))
    hot[np.arange(len(tokens)), tokens] = 1.0
    return hot


def position_outcomes(target, draft, drafts=None) -> tuple[np.ndarray, np.ndarray]:
    """Per position, given it is reached: (accept [n, V], reject [n]).

    accept[i, y] = P(d_i = y and d_i accepted), reject[i] = P(d_i rejected); they sum to 1.
    Drafts drawn from q / Q: accept = min(p, q) / Q, reject = sum(max(q - p, 0)) / Q.
    Fixed drafts: accept = min(1, p(d) / q(d)) at d, reject = max(q(d) - p(d), 0) / q(d),
    with q one-hot at d when ``draft`` is None. Raises ValueError where q(d) = 0 < p(d)
    (such a draft cannot come from q: outside the law), or q has no mass.
    """
    p = _f64(target)
    n, vocab = p.shape
    if drafts is None:
        if draft is None:
            raise ValueError("without draft probs the drafts must be given")
        q = _f64(draft)
        mass = q.sum(axis=1)
        if np.any(mass <= 0):
            raise ValueError("a draft row has no positive mass")
        return np.minimum(p, q) / mass[:, None], np.maximum(q - p, 0.0).sum(axis=1) / mass
    drafts = np.asarray(drafts, dtype=np.int64)
    rows = np.arange(n)
    p_d = p[rows, drafts]
    q_d = np.ones(n) if draft is None else _f64(draft)[rows, drafts]
    if np.any((q_d <= 0) & (p_d > 0)):
        raise ValueError("a fixed draft has q(d) = 0 < p(d): it cannot come from q")
    ratio = np.divide(p_d, q_d, out=np.zeros(n), where=q_d > 0)
    alpha = np.minimum(1.0, ratio)
    reject = np.divide(np.maximum(q_d - p_d, 0.0), q_d, out=np.ones(n), where=q_d > 0)
    return _one_hot(drafts, vocab) * alpha[:, None], reject


def acceptance_probs(target, draft, drafts=None) -> np.ndarray:
    """float64 [n]: alpha_i = P(d_i accepted | position i reached).

    Drafts drawn from q: alpha_i = sum_x q_i(x) / Q_i * min(1, p_i(x) / q_i(x))
    = sum_x min(p_i(x), q_i(x)) / Q_i. Fixed drafts: min(1, p(d) / q(d)); without draft
    rows: min(1, p(d)). p(d) = 0 gives 0; q(d) = 0 < p(d) raises ValueError.
    """
    accept, _ = position_outcomes(target, draft, drafts)
    return np.minimum(accept.sum(axis=1), 1.0)


def rejection_probs(target, draft, drafts=None) -> np.ndarray:
    """float64 [n]: 1 - alpha_i, computed directly (no cancellation when alpha ~ 1)."""
    return position_outcomes(target, draft, drafts)[1]


def acceptance_length_law(alphas, rejects=None) -> np.ndarray:
    """float64 [n + 1]: P(A = j), where P(A >= j) = prod_{i<j} alpha_i.

    P(A = j) = P(A >= j) (1 - alpha_j) for j < n and P(A = n) = prod_i alpha_i; ``rejects``
    (1 - alpha, default computed from ``alphas``) may be passed exactly."""
    alphas = _f64(alphas)
    rejects = 1.0 - alphas if rejects is None else _f64(rejects)
    reach = np.concatenate([[1.0], np.cumprod(alphas)])
    return reach * np.concatenate([rejects, [1.0]])


def residual(target_row, draft_row, draft_token=None) -> np.ndarray:
    """float64 [V]: max(p - q, 0) / sum(max(p - q, 0)), q one-hot at ``draft_token`` when
    ``draft_row`` is None. Raises ValueError when the residual has no mass."""
    excess = np.maximum(_f64(target_row) - _draft_row(target_row, draft_row, draft_token), 0.0)
    total = excess.sum()
    if not total > 0:
        raise ValueError("the residual max(p - q, 0) has no mass")
    return excess / total


def residual_support(target_row, draft_row, draft_token=None) -> np.ndarray:
    """bool [V]: p - q > 0 (float64 of the float32 values), q one-hot at the draft when
    ``draft_row`` is None: the tokens a rejection may emit."""
    return _f64(target_row) - _draft_row(target_row, draft_row, draft_token) > 0


def _draft_row(target_row, draft_row, draft_token) -> np.ndarray:
    if draft_row is not None:
        return _f64(draft_row)
    if draft_token is None:
        raise ValueError("without a draft row the draft token is needed")
    q = np.zeros(np.shape(target_row)[-1])
    q[draft_token] = 1.0
    return q


def _residual_at(target, draft, drafts, i: int) -> np.ndarray:
    return residual(target[i], None if draft is None else draft[i],
                    None if drafts is None else int(drafts[i]))


def joint_law(target, draft, bonus: int, drafts=None) -> np.ndarray:
    """float64 [n + 1, V]: P(A = j, Y = y), Y the token emitted after the accepted prefix.

    Row j < n: P(A = j) * residual_j(y); row n: P(A = n) at the bonus. Rows with
    P(A = j) = 0 stay 0 and never build their residual (it may be empty there)."""
    accept, reject = position_outcomes(target, draft, drafts)
    n, vocab = accept.shape
    length = acceptance_length_law(np.minimum(accept.sum(axis=1), 1.0), reject)
    law = np.zeros((n + 1, vocab))
    for j in np.flatnonzero(length[:n] > 0):
        law[j] = length[j] * _residual_at(target, draft, drafts, j)
    law[n, bonus] = length[n]
    return law


def slot_marginals(target, draft, bonus: int, drafts=None) -> tuple[np.ndarray, np.ndarray]:
    """(reach [n + 1], law [n + 1, V]): reach[i] = P(A >= i) = P(slot i is written), and
    law[i] the token in slot i given it is written: accept_i + reject_i * residual_i for
    i < n, the bonus one-hot at i = n. Unreachable slots have a zero row.

    With drafts drawn from q, law[i] = p_i / P_i exactly when P_i = Q_i (lossless)."""
    accept, reject = position_outcomes(target, draft, drafts)
    n, vocab = accept.shape
    reach = np.concatenate([[1.0], np.cumprod(np.minimum(accept.sum(axis=1), 1.0))])
    law = np.zeros((n + 1, vocab))
    for i in np.flatnonzero(reach[:n] > 0):
        law[i] = accept[i]
        if reject[i] > 0:
            law[i] += reject[i] * _residual_at(target, draft, drafts, i)
    if reach[n] > 0:
        law[n, bonus] = 1.0
    return reach, law


def greedy_output(target, drafts, bonus: int, width: int) -> np.ndarray:
    """int64 [width]: the greedy row. d_i is accepted iff d_i = argmax p_i (lowest index on
    ties); the first mismatch emits argmax p_A, else the bonus follows; then -1."""
    drafts = np.asarray(drafts, dtype=np.int64)
    n = len(drafts)
    if width < n + 1:
        raise ValueError(f"width {width} cannot hold {n} drafts and one more token")
    best = np.argmax(np.asarray(target), axis=1) if n else np.zeros(0, np.int64)
    mismatch = np.flatnonzero(drafts != best)
    stop = int(mismatch[0]) if len(mismatch) else n
    row = np.full(width, -1, dtype=np.int64)
    row[:stop] = drafts[:stop]
    row[stop] = best[stop] if stop < n else bonus
    return row
