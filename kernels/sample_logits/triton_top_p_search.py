"""The top-p threshold of whole rows in one program each (triton-sample-logits' fallback,
step 2 of kernels/sample_logits/triton_row_fallback.py).

With z = x / T, top the row's largest x, the weights w = exp(z - top / T) of the kept
entries (key >= kth, finite) in float32 (a float32 softmax's terms), summed in float64, and
W their sum: c is the smallest key >= kth with mass(key > c) < top_p W. A WAYS-way search
finds it, [lo, hi] holding c throughout, each pass the masses above WAYS probes:

1. one pass: top and the least kept value; one pass: W;
2. search passes over the row. The first VALUE_PASSES place their probes by value, evenly
   between the ends of the range (the first between top and the larger of the least kept
   value and top + T ln((1 - top_p) W / 2V), below which entries weigh under
   (1 - top_p) W / 2V each): logits are dense by value, where evenly spaced keys spend
   passes on the binades near zero. Later passes space them by key, at most 11 for 2^32
   keys. Any ascending probes keep the search exact; these only make it shorter;
3. once the range can hold at most CAP entries, one pass copies them (their x, in column
   order) to a scratch row, and the search goes on over those CAP entries, with the mass
   above the range added: every pass after that reads 4 CAP bytes, not the row. The bound
   on the range's entries is its mass over the least weight in it, (mass(key >= lo) -
   mass(key > hi)) / w(lo), which every search pass gives; should the copy still find more
   than CAP (rounding), the search goes on over the row, as exact.

The masses over the scratch row are sums in column order too, of the same float32 weights:
the same float64 sums, but for the order in which the range's mass and the rest are added.

Memory traffic per row: the row read 2 + (search passes until the range holds CAP) + 1
(the copy) times, from L2 where it fits; then 4 CAP bytes a pass (L2). Rows of 151936 like
the bench's (N(0, 0.01) at top-p 0.99, N(0, 4) at T 0.8 and top-p 0.9): 2 search passes
over the row, 592 and 1559 entries copied, 7 passes over the copy
(benchmarks/top_p_passes.py).
"""

import triton
import triton.language as tl

from sampling_harness.kernels.sample_logits.triton_row_tiles import (
    WAYS,
    fold_tiles,
    four_tiles,
    pick,
    probes,
    row_tile,
)
from sampling_harness.kernels.sample_logits.triton_top_k_select import ordered, value_of_key

CAP = tl.constexpr(4096)           # entries of a row's scratch (16 KB)
VALUE_PASSES = tl.constexpr(3)     # search passes whose probes are spaced by value
COPY_WHEN = tl.constexpr(1.0)      # copy once the bound is <= COPY_WHEN CAP (a test raises
# it to make the copy overflow)


@triton.jit
def kept_weights(x, inside, kth, t, z_top):
    """exp(z - top) of the kept entries (key >= kth, finite), 0 elsewhere, as float64 from a
    float32 exp (z = x / T and ``z_top`` float32: the relative error of a float32 softmax
    term, which the sums, in float64, do not grow)."""
    kept = inside & (ordered(x) >= kth[:, None]) & (x > float("-inf"))
    z = tl.where(kept, x, 0.0) / t[:, None]
    return tl.where(kept, tl.exp(tl.minimum(z - z_top[:, None], 0.0)), 0.0).to(tl.float64)


@triton.jit
def add_mass_over(over_mass, x, inside, probe, kth, t, z_top):
    """over_mass [R, WAYS, SEARCH] += the kept weights of a tile x [R, SEARCH] whose keys are
    above each probe (float64; each slot adds its columns in column order; a
    ``fold_tiles`` fold)."""
    w = kept_weights(x, inside, kth, t, z_top)
    over = ordered(x)[:, None, :] > probe.to(tl.int32)[:, :, None]
    return over_mass + tl.where(over, w[:, None, :], 0.0)


@triton.jit
def value_probes(lo, hi, x_low, x_high):
    """[R, WAYS] keys of the values x_low + (j + 1) (x_high - x_low) / (WAYS + 1), within
    [lo, hi] (ascending)."""
    j = tl.arange(0, WAYS)[None, :].to(tl.float32)
    x = x_low[:, None] + (x_high - x_low)[:, None] * ((j + 1.0) / (WAYS + 1))
    return tl.minimum(tl.maximum(ordered(x).to(tl.int64), lo[:, None]), hi[:, None])


@triton.jit
def row_ends_and_mass(logits_ptr, rows64, ok, stride, V, kth, t, BLOCK: tl.constexpr):
    """(top, the least kept x, z_top = top / T, W float64): two passes, four tiles of BLOCK
    columns read at once (W summed in column order)."""
    top = tl.full(kth.shape, float("-inf"), tl.float32)
    least = tl.full(kth.shape, float("inf"), tl.float32)
    for start in range(0, V, 4 * BLOCK):
        x0, in0, x1, in1, x2, in2, x3, in3 = four_tiles(logits_ptr, rows64, ok, stride, V,
                                                        start, BLOCK)
        top = tl.maximum(top, tl.max(tl.where(in0, x0, float("-inf")), axis=1))
        top = tl.maximum(top, tl.max(tl.where(in1, x1, float("-inf")), axis=1))
        top = tl.maximum(top, tl.max(tl.where(in2, x2, float("-inf")), axis=1))
        top = tl.maximum(top, tl.max(tl.where(in3, x3, float("-inf")), axis=1))
        least = tl.minimum(least, least_kept(x0, in0, kth))
        least = tl.minimum(least, least_kept(x1, in1, kth))
        least = tl.minimum(least, least_kept(x2, in2, kth))
        least = tl.minimum(least, least_kept(x3, in3, kth))
    z_top = tl.where(top > float("-inf"), top / t, 0.0)
    mass = tl.zeros(kth.shape, tl.float64)
    for start in range(0, V, 4 * BLOCK):
        x0, in0, x1, in1, x2, in2, x3, in3 = four_tiles(logits_ptr, rows64, ok, stride, V,
                                                        start, BLOCK)
        mass += tl.sum(kept_weights(x0, in0, kth, t, z_top), axis=1)
        mass += tl.sum(kept_weights(x1, in1, kth, t, z_top), axis=1)
        mass += tl.sum(kept_weights(x2, in2, kth, t, z_top), axis=1)
        mass += tl.sum(kept_weights(x3, in3, kth, t, z_top), axis=1)
    return top, least, z_top, mass


@triton.jit
def least_kept(x, inside, kth):
    """The least kept (key >= kth, finite) x of each row of a tile, +inf if none."""
    kept = inside & (ordered(x) >= kth[:, None]) & (x > float("-inf"))
    return tl.min(tl.where(kept, x, float("inf")), axis=1)


@triton.jit
def copy_range(logits_ptr, cand_ptr, rows64, ok, stride, V, kth, lo, hi, BLOCK: tl.constexpr):
    """Copy each row's kept entries with keys in [lo, hi], in column order, to its scratch
    row (CAP float32 a row, the first CAP of them); return how many there are."""
    n = tl.zeros(lo.shape, tl.int32)
    for start in range(0, V, BLOCK):
        x, _, inside = row_tile(logits_ptr, rows64, ok, stride, V, start, BLOCK)
        key = ordered(x)
        take = (inside & (x > float("-inf")) & (key >= kth[:, None]) & (key >= lo[:, None])
                & (key <= hi[:, None]))
        at = n[:, None] + tl.cumsum(take.to(tl.int32), axis=1) - 1
        tl.store(cand_ptr + rows64[:, None] * CAP + at, x, mask=take & (at < CAP))
        n += tl.sum(take.to(tl.int32), axis=1)
    return n


@triton.jit
def range_bound(lo, mass_lo, mass_hi, t, z_top):
    """An upper bound on the kept entries with keys in [lo, hi]: their mass, mass(key >= lo)
    - mass(key > hi), over the least weight among them, w(lo) (+inf where w(lo) is 0)."""
    x_lo = value_of_key(lo.to(tl.int32))
    w_lo = tl.exp(tl.minimum(x_lo / t - z_top, 0.0)).to(tl.float64)
    return tl.where(w_lo > 0, (mass_lo - mass_hi) / tl.where(w_lo > 0, w_lo, 1.0),
                    float("inf"))


@triton.jit
def row_top_p_key(logits_ptr, cand_ptr, rows64, ok, stride, V, kth, t, top_p, may_copy,
                  BLOCK: tl.constexpr, SEARCH: tl.constexpr, UNROLL: tl.constexpr):
    """c's key for the rows ``ok`` (module docstring): the first probe whose mass is below
    the bound is the new hi, the probe before it plus one the new lo. Rows ``may_copy``
    have a scratch row (CAP float32 at cand_ptr + row CAP); the copy is made when every open
    row has one and fits."""
    top, least, z_top, mass = row_ends_and_mass(logits_ptr, rows64, ok, stride, V, kth, t,
                                                BLOCK)
    bound = top_p.to(tl.float64) * mass
    lo = kth.to(tl.int64)
    hi = tl.maximum(ordered(top).to(tl.int64), lo)
    live = top > float("-inf")                  # rows searched here (the others: closed)
    tail = tl.maximum((1.0 - top_p) * mass.to(tl.float32) / (2.0 * V), 1e-30)
    x_high = tl.where(live, top, 0.0)
    x_low = tl.where(live, tl.maximum(x_high + t * tl.log(tail), least), 0.0)
    mass_lo, mass_hi = mass, tl.zeros(kth.shape, tl.float64)   # mass(key >= lo), (key > hi)
    base = tl.zeros(kth.shape, tl.float64)      # the mass above the copied range
    passes = tl.full([], 0, tl.int32)
    tried = tl.full([], 0, tl.int32)            # the copy made (once at most)
    copied = tl.full([], 0, tl.int32)           # and every open row's range fit the scratch
    n = tl.zeros(kth.shape, tl.int32)
    while tl.max(hi - lo) > 0:
        open_ = lo < hi
        spread = tl.where(open_, range_bound(lo, mass_lo, mass_hi, t, z_top), 0.0)
        spread = tl.where(open_ & ~may_copy, float("inf"), spread)
        if (tried == 0) & (tl.max(spread) <= COPY_WHEN * CAP):
            n = copy_range(logits_ptr, cand_ptr, rows64, open_, stride, V, kth, lo, hi,
                           SEARCH * UNROLL)
            tried = tl.full([], 1, tl.int32)
            copied = (tl.max(tl.where(open_, n, 0)) <= CAP).to(tl.int32)
            base = tl.where(copied > 0, mass_hi, base)
        else:
            probe = probes(lo, hi, 0)
            if passes < VALUE_PASSES:
                x_lo = value_of_key(lo.to(tl.int32))
                x_hi = value_of_key(hi.to(tl.int32))
                by_value = (x_lo > float("-inf")) & (hi - lo > 64 * (WAYS + 1))
                x_lo = tl.where(by_value, x_lo, 0.0)
                x_hi = tl.where(by_value, x_hi, 0.0)
                if passes == 0:
                    by_value = live
                    x_lo, x_hi = x_low, x_high
                probe = tl.where(by_value[:, None], value_probes(lo, hi, x_lo, x_hi), probe)
            passes += 1
            over_mass = tl.zeros([kth.shape[0], WAYS, SEARCH], tl.float64)  # summed once a pass
            if copied > 0:
                for start in range(0, CAP, SEARCH * UNROLL):
                    over_mass = fold_tiles(over_mass, add_mass_over, cand_ptr, rows64, open_,
                                           CAP, n[:, None], start, probe, kth, t, z_top,
                                           SEARCH, UNROLL)
            else:
                for start in range(0, V, SEARCH * UNROLL):
                    over_mass = fold_tiles(over_mass, add_mass_over, logits_ptr, rows64, ok,
                                           stride, V, start, probe, kth, t, z_top, SEARCH,
                                           UNROLL)
            above = base[:, None] + tl.sum(over_mass, axis=2)
            f = WAYS - tl.sum((above < bound[:, None]).to(tl.int32), axis=1)  # first below
            lower, upper = f > 0, f < WAYS
            hi_next = tl.where(upper, pick(probe, f), hi)
            lo_next = tl.where(lower, tl.minimum(pick(probe, f - 1) + 1, hi), lo)
            mass_hi = tl.where(open_ & upper, pick(above, f), mass_hi)
            mass_lo = tl.where(open_ & lower, pick(above, f - 1), mass_lo)
            lo = tl.where(open_, lo_next, lo)
            hi = tl.where(open_, hi_next, hi)
    return lo.to(tl.int32)
