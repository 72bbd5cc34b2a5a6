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

The logprobs of these values (the modes of family ``logprobs``, their ranges under every
float32 resolution, TME and float32 tolerances) are reference/logprobs.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sampling_harness.reference.min_p import min_p_masks

U32 = float(torch.finfo(torch.float32).eps) / 2  # unit roundoff of float32: 2^-24
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


def checked_logits(logits64) -> np.ndarray:
    """float64 [B, V] logits (a tensor upcast exactly), each row with a finite entry and no NaN
    or +inf; ValueError otherwise."""
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
    x = checked_logits(logits64)
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
    x = checked_logits(logits)
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
