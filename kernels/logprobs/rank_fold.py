"""The fold of triton-logprobs: one block of a row into the running max and sum-exp and the
counts of its requested keys, and the merge of a row's splits (kernels/logprobs/
triton_logprobs.py launches them; its docstring states the algorithm).

The ranks are counts of entries >= each requested key, kept per lane and group of sorted
keys as float32 (a compare-select, the add on the FMA pipe: exact below 2^24 a lane). The
sum-exp is kept per element: one exponential e^-|z - m| an element that also rescales.
(Int32 counts, of 0/1 or of compare masks, and a per-thread sum-exp were measured no faster
on an H100: docs/measurements/bench.md, 2026-11-26.) (A search among the sorted keys for
the unpruned blocks, tried in issue 38, did not compile on triton 3.6 and was removed.)
"""

import triton
import triton.language as tl

LOWEST = tl.constexpr(-3.4028234663852886e38)   # the lowest finite float32
LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def slot_order(logits_ptr, ids_ptr, rows, row_ok, cutoff, V, K, stride, processed,
               KP: tl.constexpr):
    """Per slot [R, KP] (slot, slot < K, id live, key, skipped, count key, position): the
    position in the descending order of the count keys, skipped slots (padding, -inf keys,
    whose rank is V, and NaN keys) first, ties by slot: a permutation of 0 .. KP - 1."""
    slot = tl.arange(0, KP)
    ok = row_ok[:, None] & (slot[None, :] < K)
    ids = tl.load(ids_ptr + rows.to(tl.int64)[:, None] * K + slot[None, :], mask=ok, other=-1)
    live = ok & (ids >= 0) & (ids < V)
    key = tl.load(logits_ptr + rows.to(tl.int64)[:, None] * stride + ids, mask=live,
                  other=float("-inf")).to(tl.float32)
    if processed:
        key = tl.where(key >= cutoff[:, None], key, float("-inf"))
    skip = ~(key > float("-inf"))
    ck = tl.where(skip, float("inf"), key)            # +inf: never counted, never needed
    a_ck, a_skip, a_slot = ck[:, None, :], skip[:, None, :], slot[None, None, :]   # i
    b_ck, b_skip, b_slot = ck[:, :, None], skip[:, :, None], slot[None, :, None]   # j
    ahead = (a_skip & ~b_skip) | ((a_skip == b_skip) & (
        (a_ck > b_ck) | ((a_ck == b_ck) & (a_slot < b_slot))))
    pos = tl.sum(tl.where(ahead, 1, 0), axis=2)       # how many slots go before j
    return slot, ok, live, key, skip, ck, pos


@triton.jit
def sorted_keys(ck, pos, FIRST: tl.constexpr, G: tl.constexpr):
    """[R, G, 1]: the count keys at sorted positions FIRST .. FIRST + G - 1 (+inf where a
    skipped slot sits: never counted)."""
    at = FIRST + tl.arange(0, G)
    here = pos[:, None, :] == at[None, :, None]
    return tl.max(tl.where(here, ck[:, None, :], float("-inf")), axis=2)[:, :, None]


@triton.jit
def count_lanes(count, key, key_id, LANES: tl.constexpr):
    """count [R, G, LANES] += (key [R, 1, BLOCK] >= key_id [R, G, 1]), float32, summed over
    each thread's elements (4 adjacent, repeated BLOCK / (4 LANES) times) in registers: a
    compare that writes 1.0 or 0 (FSET.BF) and an add an element and key, as read in the
    SASS on an H100. (int32 counts of compare masks -1 or 0, tried for three-operand adds,
    ran 1.6x slower there.)"""
    hit = tl.where(key >= key_id, 1.0, 0.0)
    reps: tl.constexpr = hit.shape[2] // (4 * LANES)
    hit = tl.reshape(hit, [hit.shape[0], hit.shape[1], reps, LANES, 4])
    return count + tl.sum(tl.sum(hit, 4), 2)


@triton.jit
def zero_counts(R: tl.constexpr, G: tl.constexpr, LANES: tl.constexpr):
    """[R, G, LANES] float32 zeros: a group's lane counts."""
    return tl.zeros([R, G, LANES], tl.float32)


@triton.jit
def online_lse(z, m, s):
    """Fold z [R, 1, BLOCK] (-inf where masked) into the running max m and sum-exp s [R, 1,
    BLOCK]: one exponential e^-|z - m| that rescales s when z is the new max and is z's term
    otherwise. m starts at the lowest finite float, so no -inf - -inf; -inf adds 0."""
    e = tl.exp2(tl.abs(z - m) * -LOG2E)
    s = tl.where(z > m, s * e + 1.0, s + e)
    m = tl.maximum(m, z)
    return m, s


@triton.jit
def needed(bm, least):
    """Whether any row's block max reaches a group's smallest key (NaN: needed)."""
    return tl.max(tl.where(bm < least, 0, 1)) > 0


@triton.jit
def fold(x, ok, m, s, counts, keys, least, cutoff, t, logprobs, processed,
         LANES: tl.constexpr, MASKED: tl.constexpr, PRUNED: tl.constexpr):
    """Fold a block x [R, 1, BLOCK] (-inf where not ok) into the per-element max m and
    sum-exp s and the counts of the three groups: all of them, or
    (PRUNED) those whose smallest key the block's max reaches, the last group (the smallest
    keys) first, each next one only if the one after it was. ``logprobs`` and ``processed``:
    runtime flags of the mode (one uniform branch a block each, not a compiled kernel per
    mode)."""
    key = x.to(tl.float32)
    if processed:
        key = tl.where(key >= cutoff[:, None, None], key, float("-inf"))
    if logprobs:
        z = key
        if processed:
            z = key / t[:, None, None]
        m, s = online_lse(z, m, s)
    if PRUNED:
        bm = tl.max(key, axis=2)                      # [R, 1]; -inf where masked
    if MASKED:
        key = tl.where(ok, key, float("nan"))        # never >= a key: not counted
    c1, c2, c3 = counts
    k1, k2, k3 = keys
    l1, l2, l3 = least
    if not PRUNED:
        c1 = count_lanes(c1, key, k1, LANES)
        c2 = count_lanes(c2, key, k2, LANES)
        c3 = count_lanes(c3, key, k3, LANES)
    elif needed(bm, l3):
        c3 = count_lanes(c3, key, k3, LANES)
        if needed(bm, l2):
            c2 = count_lanes(c2, key, k2, LANES)
            if needed(bm, l1):
                c1 = count_lanes(c1, key, k1, LANES)
    return m, s, (c1, c2, c3)


@triton.jit
def store_group(counts_ptr, count, rows, row_ok, split, B, W: tl.constexpr,
                FIRST: tl.constexpr):
    """The counts of window positions FIRST .. of one split (the group's lane counts)."""
    at = FIRST + tl.arange(0, count.shape[1])
    total = tl.sum(count, axis=2).to(tl.int32)
    tl.store(counts_ptr + (split * B + rows.to(tl.int64))[:, None] * W + at[None, :],
             total, mask=row_ok[:, None])


@triton.jit
def merged_lse(ms_ptr, rows, row_ok, splits, B):
    """[R]: lse of the rows from the S partials (m, s), read from L2 (.cg: other SMs wrote
    them)."""
    m = tl.full(rows.shape, LOWEST, tl.float32)
    s = tl.zeros(rows.shape, tl.float32)
    for p in range(0, splits):
        m_p = tl.load(ms_ptr + p * B + rows, mask=row_ok, other=LOWEST, cache_modifier=".cg")
        s_p = tl.load(ms_ptr + (splits + p) * B + rows, mask=row_ok, other=0.0,
                      cache_modifier=".cg")
        m_new = tl.maximum(m, m_p)
        s = s * tl.exp(m - m_new) + s_p * tl.exp(m_p - m_new)
        m = m_new
    return tl.where(s > 0, m, 0.0) + tl.log(tl.maximum(s, 1.0))   # s = 0 or s >= 1
