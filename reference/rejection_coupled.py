"""The float64 rejection sampler fed triton-rejection's own random words (noise coupling).

Request b owns the draft rows t = s_b + i, i < n_b (s_b the cumulative start). A
probabilistic request accepts d_i iff u_i q_i(d_i) < p_i(d_i), computed in float64 from the
float32 values, with u_i = (hi 2^21 + floor(lo / 2^11)) 2^-53 from its acceptance words
(q = 1 without draft probs). A = the first rejected position, n_b if none. At A < n_b the
recovered token is the winner of the two-level exponential race over the residual
w = max(p_A - q_A, 0) (q one-hot at d_A without draft probs), which draws v with probability
w(v) / sum w. A greedy request accepts while d_i = argmax p_i (the first maximum) and emits
that argmax at the first mismatch. At A = n_b the bonus token follows. Output slot j holds
d_j for j < A, the emitted token at j = A, -1 after.

Acceptance and greedy steps are the kernel's float64 / float32 arithmetic exactly, so they
never differ. Only the race is computed in float32 by the kernel: rows whose two best race
scores lie within float32 rounding are ``ambiguous`` and may legitimately differ.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.reference.categorical import chunked_race_winner, exponential_from_bits

AMBIGUOUS = 2e-6        # relative gap of the two best token scores float32 may not order
CHUNK_AMBIGUOUS = 1e-5  # chunk masses are float32 sums of up to 2048 residual weights


def uniforms(accept_words: np.ndarray) -> np.ndarray:
    """u = (hi 2^21 + floor(lo / 2^11)) 2^-53 from words [..., 2] = (hi, lo): exact in float64,
    on the 2^-53 grid of [0, 1)."""
    words = np.asarray(accept_words, dtype=np.int64)
    return ((words[..., 0] << 21) + (words[..., 1] >> 11)).astype(np.float64) * 2.0**-53


def race_noise(main: np.ndarray, refine: np.ndarray, chunk_words: np.ndarray):
    """(chunk_noise [B, chunks], token_noise [B, V]): the Exp(1) variates in float64 from the
    words of ``race_bits`` (chunk variates always take their 32 refinement bits)."""
    chunk_words = np.asarray(chunk_words, dtype=np.int64)
    return (exponential_from_bits(chunk_words[..., 0], chunk_words[..., 1], refine_below=2**32),
            exponential_from_bits(main, refine))


def accepted_length(p_draft: np.ndarray, q_draft: np.ndarray, u: np.ndarray) -> int:
    """A: the first i with not (u_i q_i(d_i) < p_i(d_i)) in float64, n if none."""
    rejected = ~(u * q_draft < p_draft)
    return int(np.argmax(rejected)) if rejected.any() else len(p_draft)


def greedy_walk(target: np.ndarray, drafts: np.ndarray) -> tuple[int, int | None]:
    """(A, argmax p_A): the first i with d_i != argmax p_i (the first maximum), or (n, None)."""
    for i, (row, draft) in enumerate(zip(target, drafts, strict=True)):
        top = int(np.argmax(row))
        if top != draft:
            return i, top
    return len(drafts), None


def residual(target_row: np.ndarray, draft_row: np.ndarray | None, draft: int) -> np.ndarray:
    """w = max(p - q, 0) in float64 from the float32 values; q one-hot at ``draft`` when there
    are no draft probs (so w is p with the draft's entry lowered by 1, floored at 0)."""
    p = np.asarray(target_row, dtype=np.float64)
    if draft_row is None:
        q = np.zeros_like(p)
        q[draft] = 1.0
    else:
        q = np.asarray(draft_row, dtype=np.float64)
    return np.maximum(p - q, 0.0)


def coupled_output(draft_token_ids, num_draft_tokens, draft_probs, target_probs, bonus, greedy,
                   accept_words, chunk_noise, token_noise, width: int):
    """(output int64 [B, K + 1], ambiguous bool [B]) from the given words and noise.

    ``accept_words`` int64 [B, K, 2] (``rejection_bits``); ``chunk_noise`` [B, chunks] and
    ``token_noise`` [B, V] the Exp(1) variates of the race (``race_noise`` of ``race_bits``);
    ``width`` the race's chunk width. Arrays are numpy (or CPU tensors); ``draft_probs`` may be
    None. Rows race with noise row b, the request's index.
    """
    counts = [int(c) for c in num_draft_tokens]
    drafts = np.asarray(draft_token_ids, dtype=np.int64)
    target = np.asarray(target_probs, dtype=np.float64)
    draft = None if draft_probs is None else np.asarray(draft_probs, dtype=np.float64)
    bonus, greedy = np.asarray(bonus, dtype=np.int64), np.asarray(greedy, dtype=bool)
    u = uniforms(accept_words)
    batch, slots = len(counts), max(counts, default=0) + 1
    out = np.full((batch, slots), -1, dtype=np.int64)
    weights = np.zeros((batch, target.shape[1]))
    racing = np.zeros(batch, dtype=bool)
    stop = np.zeros(batch, dtype=np.int64)  # A: the slot of the emitted token
    start = 0
    for b, n in enumerate(counts):
        rows, ids = slice(start, start + n), drafts[start:start + n]
        if greedy[b]:
            accepted, top = greedy_walk(target[rows], ids)
            emitted = bonus[b] if top is None else top
        else:
            p_draft = target[rows][np.arange(n), ids]
            q_draft = np.ones(n) if draft is None else draft[rows][np.arange(n), ids]
            accepted, emitted = accepted_length(p_draft, q_draft, u[b, :n]), bonus[b]
            if accepted < n:  # emitted: the race winner, filled in below
                t = start + accepted
                weights[b] = residual(target[t], None if draft is None else draft[t], ids[accepted])
                racing[b] = True
        out[b, :accepted] = ids[:accepted]
        out[b, accepted] = emitted
        stop[b] = accepted
        start += n
    winner, chunk_gap, token_gap = chunked_race_winner(weights, np.asarray(chunk_noise),
                                                       np.asarray(token_noise), width)
    out[racing, stop[racing]] = winner[racing]
    ambiguous = racing & ((chunk_gap <= CHUNK_AMBIGUOUS) | (token_gap <= AMBIGUOUS))
    return out, ambiguous
