"""Ranks by search: the counts of a row's requested keys from one branch-free binary search
per element among the keys sorted once per program, and a histogram of where the elements
land (kernels/logprobs/triton_logprobs.py, ``search``; rank_fold.py counts by compares).

With the count keys sorted ascending, a[0] <= ... <= a[KP - 1] (KP a power of two; skipped
slots hold +inf, and a bucket always holds one: KP > W), an element x lands in bin
b(x) = #{i : a[i] <= x}, found in log2 KP steps: b = 0; for h = KP/2, ..., 1:
b += h if x >= a[b + h - 1] (the first probe a[KP/2 - 1] is the same for every element).
b <= KP - 1 because a[KP - 1] = +inf is never passed by a finite x, and a NaN (the ragged
block's masked lanes) passes nothing: bin 0. Since the keys are sorted, x >= a[i] iff
i < b(x), ties included, so the count of key a[i] is #{x : b(x) > i}, a suffix sum of the
bins: exact, the same counts as K compares per element, for about log2 KP compares, gathers
and adds plus a histogram (warp ballots) per element instead of 2 K.
"""

import triton
import triton.language as tl


@triton.jit
def ascending_keys(ck, pos, KP: tl.constexpr):
    """[R, 1, KP]: the count keys in ascending order, a[i] = the key at sorted position
    KP - 1 - i (slot_order sorts descending, skipped slots first, as +inf)."""
    at = KP - 1 - tl.arange(0, KP)
    here = pos[:, None, :] == at[None, :, None]
    return tl.reshape(tl.max(tl.where(here, ck[:, None, :], float("-inf")), axis=2),
                      [ck.shape[0], 1, KP])


@triton.jit
def search_bins(key, asc, KP: tl.constexpr):
    """b(key) [R, 1, BLOCK] int32: #{i : asc[i] <= key} (module docstring); NaN: 0."""
    idx = tl.arange(0, KP)[None, None, :]
    half: tl.constexpr = KP // 2
    middle = tl.max(tl.where(idx == half - 1, asc, float("-inf")), axis=2)[:, :, None]
    b = tl.where(key >= middle, half, 0)
    step: tl.constexpr = half // 2
    for level in tl.static_range(0, 16):
        if (step >> level) > 0:
            h: tl.constexpr = step >> level
            probe = tl.gather(asc, tl.broadcast_to(b + (h - 1), key.shape), 2)
            b = tl.where(key >= probe, b + h, b)
    return b


@triton.jit
def bin_histogram(hist, bins, KP: tl.constexpr):
    """hist [R, KP] += the histogram of ``bins`` [R, 1, BLOCK], per row."""
    R: tl.constexpr = bins.shape[0]
    rows = tl.arange(0, R)[:, None, None]
    flat = tl.reshape(rows * KP + bins, [R * bins.shape[2]])
    return hist + tl.reshape(tl.histogram(flat, R * KP), [R, KP])


@triton.jit
def searched_counts(hist, FIRST: tl.constexpr, G: tl.constexpr, KP: tl.constexpr,
                    W: tl.constexpr):
    """[R, G] int32: the counts of window positions FIRST .. FIRST + G - 1 (sorted positions
    KP - W + FIRST ..., ascending index i = W - 1 - FIRST - g): #{x : b(x) > i}."""
    i = W - 1 - FIRST - tl.arange(0, G)
    above = tl.arange(0, KP)[None, None, :] > i[None, :, None]
    return tl.sum(tl.where(above, hist[:, None, :], 0), axis=2)
