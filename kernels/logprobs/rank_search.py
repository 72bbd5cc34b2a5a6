"""Ranks by search: the counts of a row's requested keys from one branch-free binary search
per element among the keys, sorted once per program, and a histogram of where the
elements land, in packed 8-bit lane counters (kernels/logprobs/triton_logprobs.py, the
unpruned loop at ``search`` 1; rank_fold.py counts by a compare per key instead).

With the count keys sorted ascending, a[0] <= ... <= a[KP - 1] (KP a power of two; skipped
slots hold +inf, and a bucket always holds one: KP > W), an element x lands in bin
b(x) = #{i : a[i] <= x}, found in log2 KP steps: b = 0; for h = KP/2, ..., 1:
b += h if x >= a[b + h - 1]. Since the keys are sorted, x >= a[i] iff i < b(x), ties
included, so the count of key a[i] is #{x : b(x) > i}, a suffix sum of the bins: exact, the
counts of a compare per key and element. A bin past W (x = +inf passing skipped slots)
counts for every key, as it should; bins are at most KP - 1 = 4 NW - 1.

Each lane keeps NW int32 words of four 8-bit counters (bins 4 w .. 4 w + 3 in word w): an
element adds 1 << 8 (b mod 4) to word b // 4, a compare and an add per word where a count
per key costs two instructions per key. The words are emptied into int32 lane counts every
FLUSH blocks, before a counter can pass 255 (``flush_every``).
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
def search_level(key, asc, b, h: tl.constexpr):
    """One step of the search: b += h where key >= a[b + h - 1]."""
    probe = tl.gather(asc, tl.broadcast_to(b + (h - 1), key.shape), 2)
    return tl.where(key >= probe, b + h, b)


@triton.jit
def search_bins(key, asc, KP: tl.constexpr):
    """b(key) [R, 1, BLOCK] int32: #{i : a[i] <= key} (module docstring); NaN: 0."""
    idx = tl.arange(0, KP)[None, None, :]
    half: tl.constexpr = KP // 2
    middle = tl.max(tl.where(idx == half - 1, asc, float("-inf")), axis=2)[:, :, None]
    b = tl.where(key >= middle, half, 0)
    if KP >= 4:
        b = search_level(key, asc, b, KP // 4)
    if KP >= 8:
        b = search_level(key, asc, b, KP // 8)
    if KP >= 16:
        b = search_level(key, asc, b, KP // 16)
    if KP >= 32:
        b = search_level(key, asc, b, KP // 32)
    if KP >= 64:
        b = search_level(key, asc, b, KP // 64)
    if KP >= 128:
        b = search_level(key, asc, b, KP // 128)
    return b


@triton.jit
def add_bins(words, bins, LANES: tl.constexpr):
    """words [R, NW, LANES] += one 8-bit count per element of ``bins`` [R, 1, BLOCK] (each
    thread's elements: 4 adjacent, repeated BLOCK / (4 LANES) times), bins capped at
    4 NW - 1."""
    NW: tl.constexpr = words.shape[1]
    b = tl.minimum(bins, 4 * NW - 1)
    one = 1 << ((b & 3) * 8)
    w = tl.arange(0, NW)[None, :, None]
    add = tl.where((b >> 2) == w, one, 0)
    reps: tl.constexpr = add.shape[2] // (4 * LANES)
    add = tl.reshape(add, [add.shape[0], NW, reps, LANES, 4])
    return words + tl.sum(tl.sum(add, 4), 2)


@triton.jit
def empty_words(hist, words):
    """(hist [R, 4 NW, LANES] + the words' counters, zero words)."""
    R: tl.constexpr = words.shape[0]
    NW: tl.constexpr = words.shape[1]
    LANES: tl.constexpr = words.shape[2]
    shift = (tl.arange(0, 4) * 8)[None, None, :, None]
    fields = (words[:, :, None, :] >> shift) & 255
    return hist + tl.reshape(fields, [R, 4 * NW, LANES]), tl.zeros_like(words)


@triton.jit
def searched_counts(hist, FIRST: tl.constexpr, G: tl.constexpr, W: tl.constexpr):
    """[R, G] int32: the counts of window positions FIRST .. FIRST + G - 1 (ascending index
    i = W - 1 - FIRST - g) from the bins' totals ``hist`` [R, NB]: #{x : b(x) > i}."""
    i = W - 1 - FIRST - tl.arange(0, G)
    above = tl.arange(0, hist.shape[1])[None, None, :] > i[None, :, None]
    return tl.sum(tl.where(above, hist[:, None, :], 0), axis=2)


def flush_every(block: int, lanes: int) -> int:
    """Blocks between emptyings of the 8-bit counters: a lane adds at most block / lanes
    to one counter a block, and 255 is the most it holds."""
    per_block = block // lanes
    if not 1 <= per_block <= 255:
        raise ValueError(f"a search block gives each of {lanes} lanes {per_block} elements; "
                         "1 to 255 fit its 8-bit counters")
    return 255 // per_block


def counter_words(slots: int) -> int:
    """NW: words of four counters for the KP bins 0 .. KP - 1 (KP = ``slots``, a power of two
    above W: bins 0 .. W and, from +inf elements, up to KP - 1; Triton's tensors are powers
    of two long)."""
    return slots // 4
