"""The processed distribution of families ``logprobs`` and ``sample-logits``, in float64.

From logits x [B, V] (float32, bfloat16 or float16, upcast exactly), a float32 temperature T,
an int64 top_k and a float32 top_p per row (and, in family ``sample-logits``, a float32
min_p: reference/min_p.py, applied after step 1 and before step 2, as vLLM does):

1. z = x / T; rows with T = 0 keep z = x. The reference divides in float64 by the exact
   float32 value of T, so z is the exact quotient. A float32 kernel gets fl(x / T) or
   x * fl(1 / T): within 2u|z| of z (u = 2^-24). Rounding to nearest is monotone, so it can
   merge two quotients into a tie but never reverse their order or split an exact tie.
2. Top-k: keep z_i >= z_(k), the k-th largest of the row (ties at the boundary kept);
   k <= 0 or k >= V keeps all.
3. Top-p on p = softmax(z over the top-k set): order by z descending and keep a token iff the
   mass before it is < top_p (the smallest prefix whose mass reaches top_p, the token that
   crosses the threshold included); the first token is always kept; top_p >= 1 keeps all.

Masked entries are -inf. Ties in step 3: the reference orders tied tokens by index (lowest
first). Which members of a tied group are kept then depends on the order, but how many does
not, so the group's kept mass does not depend on it either.

Ambiguity: a float32 kernel sorts by keys it rounded (scaled logits or probabilities), with
per-token error e_i = u (r|z_i| + 2|z_i - m| + log n + 4) in log space (r = 2 division
roundings, 0 where T is 0 or 1; |z - m| from the shift by the row max m; 2 for exp; 1 for the
normalisation; |lp| <= |z - m| + log n for float32 logprob keys; 1 to spare for O(u^2)).
Tokens j, t can tie or swap in its order only if |z_j - z_t| <= e_j + e_t, which implies
|z_j - z_t| <= w_t = 2 e_t / (1 - 4u) (the window of t). Its cumulative sums carry at most
eps = u (2s + 1 + sum_j p_j kappa_j) of error, kappa_j = e_j / u, with s = n - 1 roundings
per summand (recursive sum of the normaliser and of the prefix; a tree sum has ceil(log2 n):
``sum_terms``) and 1 for the complement 1 - top_p. The kernel's key computations are assumed
monotone (round to nearest; exp monotone). So:

* top-k: entries below z_(k) within its window may be kept (ties created by rounding); those
  at or above are always kept (rounding cannot split a tie or reverse an order);
* top-p: token t's mass before it lies in [lo, hi] for every float32 resolution, lo counting
  the tokens surely kept by top-k and above z_t + w_t, hi every token that might be kept and
  is >= z_t - w_t, normalised by the largest and smallest possible top-k mass. t is kept for
  sure iff hi < top_p - eps (or nothing can precede it), dropped for sure iff
  lo >= top_p + eps (and some token surely precedes it); otherwise it is ambiguous. Exact ties
  straddling the boundary thus come out ambiguous (lo < top_p <= hi).

Ambiguous entries may come out kept or masked; the reference's own decision (``kept``) is the
float64 one with index order on ties, which lies between the two. Assumes the rounded
quotients stay finite in float32 and every row has a finite logit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sampling_harness.reference.min_p import min_p_masks

U32 = float(torch.finfo(torch.float32).eps) / 2  # unit roundoff of float32: 2^-24
MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
INPUT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def exact_logits(logits: torch.Tensor) -> np.ndarray:
    """float64 [B, V] holding exactly the values of ``logits`` (every float32, bfloat16 and
    float16 value is a float64 value; -inf stays -inf). Never regenerated or rounded."""
    if not isinstance(logits, torch.Tensor) or logits.dtype not in INPUT_DTYPES:
        raise TypeError("logits must be a float32, bfloat16 or float16 tensor")
    if logits.ndim != 2:
        raise ValueError(f"logits must be [B, V], got shape {tuple(logits.shape)}")
    return logits.detach().to("cpu", torch.float64).numpy().copy()


def _rows(value, batch: int, dtype: torch.dtype) -> np.ndarray:
    """One parameter per row, through ``dtype`` (the kernel's float32 or int64 value)."""
    t = torch.as_tensor(value).detach().to("cpu", dtype)
    out = t.to(torch.float64 if dtype.is_floating_point else torch.int64).numpy()
    return np.broadcast_to(out.reshape(-1) if out.ndim else out, (batch,)).copy()


def _checked(logits64) -> np.ndarray:
    x = exact_logits(logits64) if isinstance(logits64, torch.Tensor) else np.asarray(logits64)
    if x.ndim != 2 or x.dtype != np.float64:
        raise ValueError("logits64 must be a float64 [B, V] array")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError("logits must hold no NaN and no +inf")
    if not np.isfinite(x).any(axis=1).all():
        raise ValueError("every row needs a finite logit")
    return x


def division_roundings(temperature) -> np.ndarray:
    """int64 [B]: roundings a float32 kernel makes scaling a row (0 where T is 0 or 1, whose
    rows are not divided or divided exactly; 2 otherwise: fl(x / T) is one, x * fl(1 / T)
    two). The scaled logit is within this many times u|z| of the exact quotient."""
    t = _rows(temperature, torch.as_tensor(temperature).numel(), torch.float32)
    return np.where((t == 0) | (t == 1), 0, 2).astype(np.int64)


def collision_window(z: np.ndarray, roundings: int) -> np.ndarray:
    """w_t = 2 e_t / (1 - 4u) per finite entry of one row (0 at -inf): two tokens whose exact
    values differ by more than the window of either keep their order in float32 keys."""
    finite = np.isfinite(z)
    m, n = z[finite].max(), finite.sum()
    safe = np.where(finite, z, m)
    e = U32 * (roundings * np.abs(safe) + 2 * (m - safe) + np.log(n) + 4)
    return np.where(finite, 2 * e / (1 - 4 * U32), 0.0)


@dataclass(frozen=True, eq=False)
class Processed:
    """Steps 1-3 for a batch: ``scaled`` z [B, V] (unmasked), the reference's ``kept`` mask,
    ``certain`` (kept under every float32 resolution) and ``possible`` (kept under some);
    certain <= kept <= possible, all False at -inf entries; ``greedy`` marks T = 0 rows."""

    scaled: np.ndarray
    kept: np.ndarray
    certain: np.ndarray
    possible: np.ndarray
    greedy: np.ndarray
    roundings: np.ndarray

    @property
    def values(self) -> np.ndarray:
        return np.where(self.kept, self.scaled, -np.inf)

    @property
    def ambiguous(self) -> np.ndarray:
        return self.possible & ~self.certain


def _top_k(z: np.ndarray, k: int, window: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(certain, possible) of step 2 for one row, over finite entries."""
    finite = np.isfinite(z)
    vocab = z.size
    if k <= 0 or k >= vocab:
        return finite, finite
    kth = np.partition(z, vocab - k)[vocab - k]
    certain = finite & (z >= kth)
    if not np.isfinite(kth):
        return certain, certain
    w_kth = window[np.flatnonzero(z == kth)[0]]
    return certain, finite & (z >= kth - w_kth)


def _top_p(z, kept_k, certain_k, possible_k, top_p, window, roundings, sum_terms):
    """(kept, certain, possible) of step 3 for one row, given the masks of the filters
    before it (min-p and top-k: the reference's ``kept_k``, ``certain_k`` <= it <=
    ``possible_k``)."""
    if top_p >= 1:
        return kept_k, certain_k, possible_k
    cand = np.flatnonzero(possible_k)
    order = cand[np.argsort(-z[cand], kind="stable")]  # descending, lowest index on ties
    zs, sure, held = z[order], certain_k[order], kept_k[order]
    m = zs[0]
    ws = np.exp(zs - m)
    w_sure = np.where(sure, ws, 0.0)
    z_out, z_in = w_sure.sum(), ws.sum()
    w_held = np.where(held, ws, 0.0)
    before = np.cumsum(w_held) - w_held
    keep = held & (before < top_p * w_held.sum())
    keep[np.argmax(held)] = True  # the first kept token (the row max)
    s = cand.size - 1 if sum_terms is None else sum_terms
    kappa = (roundings * np.abs(zs) + 2 * (m - zs) + np.log(cand.size) + 4)
    eps = U32 * (2 * s + 1 + np.dot(ws, kappa) / z_out)
    eta = window[order]
    above = np.searchsorted(-zs, -(zs + eta), side="left")  # count of z_j > z_t + w_t
    reach = np.searchsorted(-zs, -(zs - eta), side="right")  # count of z_j >= z_t - w_t
    lo = np.concatenate([[0.0], np.cumsum(w_sure)])[above]
    surely_before = np.concatenate([[0], np.cumsum(sure)])[above]
    hi = np.concatenate([[0.0], np.cumsum(ws)])[reach] - ws
    sure_keep = sure & ((hi < (top_p - eps) * z_out) | (reach == 1))
    sure_drop = (lo >= (top_p + eps) * z_in) & (surely_before > 0)
    out = [np.zeros_like(possible_k) for _ in range(3)]
    for mask, row in zip(out, (keep, sure_keep, ~sure_drop), strict=True):
        mask[order] = row
    return out[0], out[1], out[2] & possible_k


def process(logits64, temperature, top_k, top_p, *, min_p=None,
            sum_terms: int | None = None) -> Processed:
    """Steps 1-3 with the ambiguity classifier (module docstring), and min-p
    (reference/min_p.py) between steps 1 and 2 where ``min_p`` (float32 [B] in [0, 1]) is
    given. ``logits64``: float64 [B, V] (or a tensor, upcast exactly); ``sum_terms``:
    roundings per summand of the kernel's float32 sums (default n - 1, the worst case of a
    recursive sum over n terms)."""
    x = _checked(logits64)
    batch = x.shape[0]
    t = _rows(temperature, batch, torch.float32)
    k = _rows(top_k, batch, torch.int64)
    p = _rows(top_p, batch, torch.float32)
    mp = np.zeros(batch) if min_p is None else _rows(min_p, batch, torch.float32)
    if np.isnan(t).any() or (t < 0).any() or np.isnan(p).any():
        raise ValueError("temperatures must be >= 0 and top_p must not be NaN")
    if np.isnan(mp).any() or (mp < 0).any() or (mp > 1).any():
        raise ValueError("min_p must lie in [0, 1]")
    z = x / np.where(t == 0, 1.0, t)[:, None]
    r = division_roundings(t)
    masks = [np.zeros(x.shape, bool) for _ in range(3)]
    for b in range(batch):
        window = collision_window(z[b], r[b])
        certain_k, possible_k = _top_k(z[b], int(k[b]), window)
        kept_m, certain_m, possible_m = min_p_masks(z[b], mp[b], window)
        rows = _top_p(z[b], kept_m & certain_k, certain_m & certain_k,
                      possible_m & possible_k, p[b], window, r[b], sum_terms)
        for mask, row in zip(masks, rows, strict=True):
            mask[b] = row
    return Processed(z, *masks, greedy=t == 0, roundings=r)


def processed_logits(logits64, temperature, top_k, top_p) -> tuple[np.ndarray, np.ndarray]:
    """(values float64 [B, V], -inf where masked; ambiguous bool [B, V]): the reference's
    processed logits and the entries a check must accept either kept (value z) or masked."""
    proc = process(logits64, temperature, top_k, top_p)
    return proc.values, proc.ambiguous


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
    x = _checked(logits)
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
    x = _checked(logits)
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


@dataclass(frozen=True, eq=False)
class ProcessedLaw:
    """float64 [B, V] laws of a ``sample-logits`` draw and the bool [B, V] ``ambiguous``.

    ``probs``: softmax of the reference's processed logits (T = 0 rows: one-hot at the
    argmax of the logits, lowest index on ties). ``certain``: softmax over the surely kept
    tokens only; ``inclusive``: over every possibly kept token. Whatever subset S of the
    ambiguous tokens a kernel keeps, a draw conditioned on landing in the surely kept set C
    has law ``certain`` exactly (e^z_i / Z_S divided by Z_C / Z_S), and the probability of
    drawing an ambiguous token lies in [0, a_max] with a_max = ``inclusive`` summed over the
    ambiguous tokens. So a chi-square over C conditional on not drawing an ambiguous token,
    with a one-sided binomial bound at a_max on the ambiguous count, is valid either way; a
    token outside ``inclusive``'s support is a validity failure."""

    probs: np.ndarray
    certain: np.ndarray
    inclusive: np.ndarray
    ambiguous: np.ndarray


def processed_probs(logits, temperature, top_k, top_p, min_p=None) -> ProcessedLaw:
    """The law a ``sample-logits`` kernel must draw from, with its ambiguous tokens (min-p
    applied where ``min_p`` is given)."""
    x = _checked(logits)
    proc = process(x, temperature, top_k, top_p, min_p=min_p)
    z = proc.scaled
    top = np.max(z, axis=1, keepdims=True)

    def law(mask):
        w = np.where(mask, np.exp(z - top), 0.0)
        total = w.sum(axis=1, keepdims=True)
        return w / np.where(total > 0, total, 1.0)

    laws = [law(m) for m in (proc.kept, proc.certain, proc.possible)]
    onehot = np.zeros(x.shape)
    onehot[np.arange(x.shape[0]), np.argmax(x, axis=1)] = 1.0
    greedy = proc.greedy[:, None]
    laws = [np.where(greedy, onehot, w) for w in laws]
    return ProcessedLaw(*laws, ambiguous=proc.ambiguous & ~greedy)


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
