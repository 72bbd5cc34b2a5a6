"""What the whole-row searches of triton-sample-logits' fallback share: a row's tiles, read
one or four at a time, and the WAYS probes of a search pass over order-preserving int32
keys (kernels/sample_logits/triton_row_fallback.py: x_(k); triton_top_p_search.py: the
top-p threshold).

Memory traffic: a tile is BLOCK float32 logits of each row, read once per call.
"""

import triton
import triton.language as tl

from sampling_harness.kernels.sample_logits.race_noise import finite_or_masked

KEY_NEG_INF = tl.constexpr(-2139095041)   # ordered(-inf)
KEY_POS_INF = tl.constexpr(2139095040)    # ordered(+inf)
WAYS = tl.constexpr(8)                    # probes per search pass


@triton.jit
def row_tile(logits_ptr, rows64, ok, stride, V, start, BLOCK: tl.constexpr):
    """(x float32 [R, BLOCK], cols, inside) of the columns start ... start + BLOCK - 1 below
    V (an int, or [R, 1] per row)."""
    cols = start + tl.arange(0, BLOCK)[None, :]
    inside = ok[:, None] & (cols < V)
    x = tl.load(logits_ptr + rows64[:, None] * stride + cols, mask=inside,
                other=float("-inf")).to(tl.float32)
    return finite_or_masked(x), cols, inside


@triton.jit
def four_tiles(logits_ptr, rows64, ok, stride, V, start, SEARCH: tl.constexpr):
    """The tiles (x, inside) of columns start + j SEARCH ..., j = 0 .. 3, read at once."""
    x0, _, in0 = row_tile(logits_ptr, rows64, ok, stride, V, start, SEARCH)
    x1, _, in1 = row_tile(logits_ptr, rows64, ok, stride, V, start + SEARCH, SEARCH)
    x2, _, in2 = row_tile(logits_ptr, rows64, ok, stride, V, start + 2 * SEARCH, SEARCH)
    x3, _, in3 = row_tile(logits_ptr, rows64, ok, stride, V, start + 3 * SEARCH, SEARCH)
    return x0, in0, x1, in1, x2, in2, x3, in3


@triton.jit
def fold_tiles(acc, FOLD: tl.constexpr, logits_ptr, rows64, ok, stride, V, start, probe, kth,
               t, z_top, SEARCH: tl.constexpr, UNROLL: tl.constexpr):
    """acc = FOLD(acc, x, inside, probe, kth, t, z_top) over the UNROLL (1, 4 or 8) tiles of
    SEARCH columns from ``start``, all read before the first is folded (UNROLL tiles of
    loads in flight, not one), folded in column order (a search pass: the same sums as one
    tile a step)."""
    if UNROLL == 1:
        x, _, inside = row_tile(logits_ptr, rows64, ok, stride, V, start, SEARCH)
        acc = FOLD(acc, x, inside, probe, kth, t, z_top)
    else:
        x0, in0, x1, in1, x2, in2, x3, in3 = four_tiles(logits_ptr, rows64, ok, stride, V,
                                                        start, SEARCH)
        if UNROLL == 8:
            x4, in4, x5, in5, x6, in6, x7, in7 = four_tiles(logits_ptr, rows64, ok, stride, V,
                                                            start + 4 * SEARCH, SEARCH)
        acc = FOLD(acc, x0, in0, probe, kth, t, z_top)
        acc = FOLD(acc, x1, in1, probe, kth, t, z_top)
        acc = FOLD(acc, x2, in2, probe, kth, t, z_top)
        acc = FOLD(acc, x3, in3, probe, kth, t, z_top)
        if UNROLL == 8:
            acc = FOLD(acc, x4, in4, probe, kth, t, z_top)
            acc = FOLD(acc, x5, in5, probe, kth, t, z_top)
            acc = FOLD(acc, x6, in6, probe, kth, t, z_top)
            acc = FOLD(acc, x7, in7, probe, kth, t, z_top)
    return acc


@triton.jit
def probes(lo, hi, FIRST: tl.constexpr):
    """[R, WAYS] keys lo + (j + FIRST) d, j = 0 .. WAYS - 1, d = (hi - lo) // (WAYS + 1) + 1,
    capped at hi: a pass evaluates all of them, so it narrows [lo, hi] to at most d keys."""
    j = tl.arange(0, WAYS)[None, :]
    d = (hi - lo) // (WAYS + 1) + 1
    return tl.minimum(lo[:, None] + (j + FIRST) * d[:, None], hi[:, None])


@triton.jit
def pick(values, index):
    """values[r, index[r]] of [R, WAYS] ``values`` (index in [0, WAYS))."""
    j = tl.arange(0, WAYS)[None, :]
    return tl.sum(tl.where(j == index[:, None], values, 0), axis=1)
