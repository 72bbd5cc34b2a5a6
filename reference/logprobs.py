"""Logprobs of family ``logprobs`` in float64: the four modes, their ranges, TME, tolerances.

A row's logprobs are log_softmax of its raw logits x (``raw_logprobs``) or of its processed
values (reference/processed.py: temperature, top-k, top-p, -inf where masked:
``processed_logprobs``); ``raw_logits`` and ``processed_logits`` are those values themselves.
``mode_values`` gives the reference's values and ranks of requested tokens, ``mode_bounds``
the ranges a check accepts whatever float32 does with the ambiguous keep/mask decisions and
with ties created by rounding; ``logprob_tolerance`` bounds the float32 arithmetic error of a
log-softmax (first-order analysis) and ``tme`` measures the agreement of two sets of
logprobs (the mean of exp(|lp - lp_ref|)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sampling_harness.reference.processed import (
    Processed,
    checked_logits,
    collision_window,
    process,
)

MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")


def logprobs(values) -> np.ndarray:
    """float64 log-softmax along the last axis: v - logsumexp(v over finite entries), -inf
    staying -inf. Exact to a few float64 ulps (the max is subtracted before exp)."""
    v = np.asarray(values, dtype=np.float64)
    if np.isnan(v).any() or np.isposinf(v).any() or not np.isfinite(v).any(axis=-1).all():
        raise ValueError("each row needs a finite entry and no NaN or +inf")
    m = np.max(v, axis=-1, keepdims=True)
    return v - (m + np.log(np.sum(np.exp(v - m), axis=-1, keepdims=True)))


def _mode_rows(x: np.ndarray, mode: str, proc: Processed | None):
    """(the row of the mode's values, its rank keys): log-softmax is a shift of each row, so
    ranks are counted on the logits (raw) or processed values, free of float64 rounding."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    keys = x if proc is None else proc.values
    return (logprobs(keys) if mode.endswith("logprobs") else keys), keys


def _gather(rows: np.ndarray, token_ids) -> tuple[np.ndarray, np.ndarray]:
    """(values [B, K] with -inf at padding, padding mask) of ids in [-1, V)."""
    ids = torch.as_tensor(token_ids).detach().cpu().numpy().astype(np.int64)
    if ids.ndim != 2 or ids.shape[0] != rows.shape[0]:
        raise ValueError(f"token_ids must be [B, K] with B = {rows.shape[0]}")
    if (ids < -1).any() or (ids >= rows.shape[1]).any():
        raise ValueError("token ids must lie in [-1, V)")
    pad = ids == -1
    vals = np.take_along_axis(rows, np.where(pad, 0, ids), axis=1)
    return np.where(pad, -np.inf, vals), pad


def _count_at_least(rows: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """int64 [B, K]: #{j : rows[b, j] >= vals[b, k]}, by a binary search of each sorted row."""
    ordered = np.sort(rows, axis=1)
    return np.stack([rows.shape[1] - np.searchsorted(o, v, side="left")
                     for o, v in zip(ordered, vals, strict=True)]).astype(np.int64)


def mode_values(logits, mode, temperature, top_k, top_p, token_ids):
    """(values float64 [B, K], ranks int64 [B, K], ambiguous bool [B, K]) of ``token_ids``.

    raw_logits = x; raw_logprobs = logprobs(x); processed_logits = the reference's processed
    values; processed_logprobs = logprobs of them. rank = #{j : value_j >= value_t} over the
    row of the mode (ties counted; a masked token's rank is V), exact in float64. Padding
    (id -1): value -inf, rank -1, never ambiguous. ``ambiguous`` marks tokens whose own
    keep/mask decision float32 cannot resolve (processed modes only); where any entry of a
    row is ambiguous the other logprobs move too: ``mode_bounds`` gives the ranges."""
    x = checked_logits(logits)
    proc = process(x, temperature, top_k, top_p) if mode.startswith("processed") else None
    rows, keys = _mode_rows(x, mode, proc)
    vals, pad = _gather(rows, token_ids)
    ranks = np.where(pad, -1, _count_at_least(keys, _gather(keys, token_ids)[0]))
    amb = np.zeros(pad.shape, bool) if proc is None else _gather(
        proc.ambiguous.astype(np.float64), token_ids)[0] == 1
    return vals, ranks, amb


@dataclass(frozen=True, eq=False)
class ModeBounds:
    """float64 [B, K] value ranges and int64 [B, K] rank ranges that hold under every float32
    resolution of the ambiguous decisions and of ties created by rounding (the float32
    arithmetic error of the values themselves is ``logprob_tolerance``'s, not included)."""

    low: np.ndarray
    high: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray


def mode_bounds(logits, mode, temperature, top_k, top_p, token_ids) -> ModeBounds:
    """Ranges for a check to accept, per requested token t of a row (padding: -inf, rank -1).

    Raw modes: the exact value; rank from the exact count up to the count of entries down to
    t's collision window below it (raw_logprobs: float32 logprob keys can tie; raw_logits
    compares the exact inputs). Processed, with C the surely kept set, P the possibly kept
    one: t surely masked: -inf, rank V. t kept: value z_t (processed_logits) or between
    z_t - lse(P) and z_t - lse(C + t) (processed_logprobs); rank from #{j in C : z_j >= z_t}
    to #{j in P : z_j >= z_t - w_t}. t ambiguous: low -inf and rank_high V besides."""
    x = checked_logits(logits)
    vals, ranks, _ = mode_values(x, mode, temperature, top_k, top_p, token_ids)
    pad = ranks < 0
    if mode.startswith("raw"):
        high = ranks
        if mode == "raw_logprobs":
            wt = _gather(np.stack([collision_window(row, 0) for row in x]), token_ids)[0]
            high = _count_at_least(x, _gather(x, token_ids)[0] - np.where(pad, 0.0, wt))
        return ModeBounds(vals, vals, ranks, np.where(pad, -1, high))
    proc = process(x, temperature, top_k, top_p)
    z = proc.scaled
    zt = _gather(z, token_ids)[0]
    cert = _gather(proc.certain.astype(np.float64), token_ids)[0] == 1
    poss = _gather(proc.possible.astype(np.float64), token_ids)[0] == 1
    wt = _gather(np.stack([collision_window(row, r) for row, r in
                           zip(z, proc.roundings, strict=True)]), token_ids)[0]
    wt = np.where(pad, 0.0, wt)
    surely = np.where(proc.certain, z, -np.inf)
    maybe = np.where(proc.possible, z, -np.inf)
    vocab = x.shape[1]
    rank_low = np.where(poss, _count_at_least(surely, np.where(poss, zt, 0.0)), vocab)
    rank_high = np.where(cert, _count_at_least(maybe, np.where(cert, zt - wt, 0.0)), vocab)
    if mode == "processed_logits":
        high = np.where(poss, zt, -np.inf)
        low = np.where(cert, zt, -np.inf)
    else:
        lse_c = _lse(surely)[:, None]
        with np.errstate(invalid="ignore"):  # at masked tokens, discarded
            norm = np.where(cert, lse_c, np.logaddexp(lse_c, np.where(poss, zt, -np.inf)))
            high = np.where(poss, zt - norm, -np.inf)
            low = np.where(cert, zt - _lse(maybe)[:, None], -np.inf)
    return ModeBounds(low, high, np.where(pad, -1, rank_low), np.where(pad, -1, rank_high))


def _lse(rows: np.ndarray) -> np.ndarray:
    """float64 [B]: logsumexp of each row over its finite entries (-inf for none)."""
    m = rows.max(axis=1)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(rows - safe[:, None]).sum(axis=1))


def tme(values, reference, token_ids=None) -> float:
    """TME = mean over non-padded tokens of exp(|lp - lp_ref|) (1 means exact agreement).

    Equal values (-inf == -inf included) count as 0 difference; a NaN, or -inf against a
    finite value, gives inf. ``token_ids`` (-1 = padding) selects the tokens; without it every
    entry counts. Returns 1.0 when nothing is selected."""
    a = torch.as_tensor(values).detach().to("cpu", torch.float64).numpy()
    b = torch.as_tensor(reference).detach().to("cpu", torch.float64).numpy()
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(a == b, 0.0, np.abs(a - b))
        diff = np.where(np.isnan(diff), np.inf, diff)
        keep = np.ones(diff.shape, bool) if token_ids is None else (
            torch.as_tensor(token_ids).cpu().numpy() != -1)
        return float(np.mean(np.exp(diff[keep]))) if keep.any() else 1.0


def logprob_tolerance(dtype, values, *, roundings=0, sum_terms=None) -> np.ndarray:
    """float64 absolute tolerance per entry of log_softmax(``values``) computed in ``dtype``.

    ``dtype`` is the arithmetic's (torch.float32 for the contract: bf16/fp16 inputs upcast to
    float32 exactly, so the input dtype adds no error of its own); u = eps(dtype) / 2.
    ``values`` float64 [B, V] are the exact inputs of the log-softmax (raw logits or processed
    values, -inf masked), each already rounded ``roundings`` times (int or [B]: 2 for float32
    scaled rows, see ``division_roundings``). First-order error analysis, m the row max,
    L the exact logsumexp, p = softmax, n finite entries, s = n - 1 (or ``sum_terms``):

    * inputs and shift: d_i = fl(z_i - m) is x_i + dx_i with |dx_i| <= u (r|x_i| + |x_i - m|);
      log-softmax moves by d lp_i = dx_i - sum_j p_j dx_j (its conditioning);
    * exp, faithful: 2u relative per term, 2u in L; normalisation or division: u;
    * the sum S of n terms, each summand through s roundings: gamma_s = s u / (1 - s u) in L
      (recursive sum: s = n - 1, the default; a tree: ceil(log2 n); an online softmax adds
      3 per rescaling of its running sum: an exp and a product);
    * log S, faithful: 2u (L - m); the final subtraction, or the log of a quotient: 2u|lp_i|;
    * a logsumexp L = m + log S rounded in the arithmetic before lp = x - L: 2u|L| (it
      dominates huge ranges: |x| ~ 6e4 gives 7e-3).

    |lp_hat_i - lp_i| <= u (dx_i/u + sum_j p_j dx_j/u + s/(1 - s u) + 3 + 2(L - m)
    + 2|lp_i| + 2|L|), 0 at -inf entries (they must be -inf exactly). TME over such tokens is
    then at most the mean of exp(tolerance). The s term dominates large rows (V = 151936:
    s u = 9e-3 for a recursive sum, s u = 1e-6 for a tree); a check states which summation it
    grants. Assumes no overflow and normal (not subnormal) results."""
    u = float(torch.finfo(dtype).eps) / 2
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    lp = logprobs(v)
    finite = np.isfinite(v)
    m = np.max(v, axis=1, keepdims=True)
    safe = np.where(finite, v, m)
    r = np.broadcast_to(np.asarray(roundings, dtype=np.float64), (v.shape[0],))[:, None]
    dx = r * np.abs(safe) + (m - safe)
    p = np.exp(lp)
    n = finite.sum(axis=1, keepdims=True)
    s = n - 1 if sum_terms is None else np.full_like(n, sum_terms)
    shift = -np.max(lp, axis=1, keepdims=True)  # L - m
    lse = np.abs(m + shift)  # |L|: a kernel may round L = m + log S, then take x - L
    units = (dx + (p * dx).sum(axis=1, keepdims=True) + s / (1 - s * u) + 3
             + 2 * shift + 2 * np.abs(np.where(finite, lp, 0.0)) + 2 * lse)
    return np.where(finite, u * units, 0.0).reshape(np.shape(values))
