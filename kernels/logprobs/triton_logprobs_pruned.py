"""triton-logprobs' pruned kernel (``PRUNE = True`` in kernels/logprobs/triton_logprobs.py):
the one pass of ``_logprobs_kernel``, with rank compares only where they can count.

An element x adds to the rank of id k only if x >= key_k. Each program orders its row's K
keys once, descending (a K x K comparison, ties broken by slot; padding, -inf keys, whose
rank is V without counting, and NaN keys go first and are never counted), and counts by
sorted position in up to three exact power-of-two groups taken from the end (the smallest
keys): 21 = 16 + 4 + 1, the smallest key alone. Per block of BLOCK columns the block's max
bm of the keys decides: a group needs compares only where bm >= its smallest key, and the
groups that do are a suffix of the order, so the branches nest. Requested ids that are the
row's largest values (top-20 and a sampled one, as engines ask) skip the 20 largest keys
in almost every block: the loop becomes the max and sum-exp pass plus one id's compares.
Random ids skip nothing (their keys lie in the bulk of the row) and would pay bm, a block
reduction with two barriers, for nothing: a program whose first block holds more than
prune_limit entries at or above the largest keys' group's smallest key runs an unpruned
loop instead (the unpruned kernel's loop, without bm and branches). Either loop is exact:
the rule only picks the faster. The last program of a row maps each slot to its sorted
position's count.

Memory traffic: as ``_logprobs_kernel``: the logits read once (4 or 2 B V per row); per
split the ids and their logits gathered (12 or 10 B K, L2 hits after the first), 4 W + 8
bytes of partials written and read once (W = the groups' width, K rounded up to three
powers of two); values and ranks written (12 B K).
"""

import triton
import triton.language as tl

from kernels.logprobs.triton_logprobs import LOG2E, LOWEST, merged_lse


@triton.jit
def slot_order(logits_ptr, ids_ptr, rows, row_ok, cutoff, V, K, stride, KP: tl.constexpr,
               PROCESSED: tl.constexpr):
    """Per slot [R, KP] (slot, slot < K, id live, key, skipped, count key, position): the
    position in the descending order of the count keys, skipped slots (padding, -inf keys,
    whose rank is V, and NaN keys) first, ties by slot: a permutation of 0 .. KP - 1."""
    slot = tl.arange(0, KP)
    ok = row_ok[:, None] & (slot[None, :] < K)
    ids = tl.load(ids_ptr + rows.to(tl.int64)[:, None] * K + slot[None, :], mask=ok, other=-1)
    live = ok & (ids >= 0) & (ids < V)
    key = tl.load(logits_ptr + rows.to(tl.int64)[:, None] * stride + ids, mask=live,
                  other=float("-inf")).to(tl.float32)
    if PROCESSED:
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
    skipped slot sits: never counted; -inf beyond KP, in absent groups)."""
    at = FIRST + tl.arange(0, G)
    here = pos[:, None, :] == at[None, :, None]
    return tl.max(tl.where(here, ck[:, None, :], float("-inf")), axis=2)[:, :, None]


@triton.jit
def count_lanes(count, key, key_id, LANES: tl.constexpr):
    """count [R, G, LANES] += (key [R, 1, BLOCK] >= key_id [R, G, 1]) as 1.0 / 0.0, summed
    over each thread's elements (4 adjacent, repeated BLOCK / (4 LANES) times) in registers."""
    hit = tl.where(key >= key_id, 1.0, 0.0)
    reps: tl.constexpr = hit.shape[2] // (4 * LANES)
    hit = tl.reshape(hit, [hit.shape[0], hit.shape[1], reps, LANES, 4])
    return count + tl.sum(tl.sum(hit, 4), 2)


@triton.jit
def needed(bm, least):
    """Whether any row's block max reaches a group's smallest key (NaN: needed)."""
    return tl.max(tl.where(bm < least, 0, 1)) > 0


@triton.jit
def fold(x, ok, m, s, counts, keys, least, cutoff, t, GROUPS: tl.constexpr,
         LANES: tl.constexpr, LOGPROBS: tl.constexpr, PROCESSED: tl.constexpr,
         MASKED: tl.constexpr, PRUNED: tl.constexpr):
    """Fold a block x [R, 1, BLOCK] (-inf where not ok) into the per-lane max m and sum-exp
    s and the counts of the groups: all of them, or (PRUNED) those whose smallest key the
    block's max reaches, the last group (the smallest keys) first, each next one only if
    the one after it was."""
    key = x.to(tl.float32)
    if PROCESSED:
        key = tl.where(key >= cutoff[:, None, None], key, float("-inf"))
    if LOGPROBS:
        z = key
        if PROCESSED:
            z = key / t[:, None, None]
        e = tl.exp2(tl.abs(z - m) * -LOG2E)          # 0 where z = -inf (m is finite)
        s = tl.where(z > m, s * e + 1.0, s + e)
        m = tl.maximum(m, z)
    if PRUNED:
        bm = tl.max(key, axis=2)                      # [R, 1]; -inf where masked
    if MASKED:
        key = tl.where(ok, key, float("nan"))        # never >= a key: not counted
    c1, c2, c3 = counts
    k1, k2, k3 = keys
    l1, l2, l3 = least
    if not PRUNED:
        c1 = count_lanes(c1, key, k1, LANES)
        if GROUPS > 1:
            c2 = count_lanes(c2, key, k2, LANES)
        if GROUPS > 2:
            c3 = count_lanes(c3, key, k3, LANES)
    elif GROUPS == 3:
        if needed(bm, l3):
            c3 = count_lanes(c3, key, k3, LANES)
            if needed(bm, l2):
                c2 = count_lanes(c2, key, k2, LANES)
                if needed(bm, l1):
                    c1 = count_lanes(c1, key, k1, LANES)
    elif GROUPS == 2:
        if needed(bm, l2):
            c2 = count_lanes(c2, key, k2, LANES)
            if needed(bm, l1):
                c1 = count_lanes(c1, key, k1, LANES)
    else:
        if needed(bm, l1):
            c1 = count_lanes(c1, key, k1, LANES)
    return m, s, (c1, c2, c3)


@triton.jit
def store_group(counts_ptr, count, rows, row_ok, split, B, W: tl.constexpr,
                FIRST: tl.constexpr):
    """Counts of sorted positions WS + FIRST .. (window index FIRST ..) of one split."""
    at = FIRST + tl.arange(0, count.shape[1])
    tl.store(counts_ptr + (split * B + rows.to(tl.int64))[:, None] * W + at[None, :],
             tl.sum(count, axis=2).to(tl.int32), mask=row_ok[:, None])


@triton.jit
def _pruned_kernel(logits_ptr, ids_ptr, cutoff_ptr, temp_ptr, tickets_ptr, counts_ptr,
                   values_ptr, ranks_ptr, B, V, K, stride, CHUNK, prune_limit,
                   LOGPROBS: tl.constexpr, PROCESSED: tl.constexpr, BLOCK_R: tl.constexpr,
                   BLOCK: tl.constexpr, LANES: tl.constexpr, KP: tl.constexpr,
                   W: tl.constexpr, G1: tl.constexpr, G2: tl.constexpr, G3: tl.constexpr,
                   GROUPS: tl.constexpr, STAGES: tl.constexpr):
    """Program (r, p): rows r BLOCK_R .. + BLOCK_R - 1, columns [p CHUNK, (p + 1) CHUNK);
    KP = K rounded up to a power of two; the groups G1, G2, G3 (GROUPS of them, W = their
    width, K <= W <= KP) take the last W sorted positions. A program prunes unless its first
    block holds more than prune_limit entries at or above group 1's smallest key. The loop
    is software-pipelined by Triton over STAGES blocks (loads in flight: see
    kernels/logprobs/triton_logprobs.py). The last program of the row block writes its
    values and ranks."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    split, splits = tl.program_id(1), tl.num_programs(1)
    row_ok = rows < B
    lo = split * CHUNK
    hi = tl.minimum(lo + CHUNK, V)
    full_end = lo + (hi - lo) // BLOCK * BLOCK
    row_ptr = logits_ptr + rows.to(tl.int64)[:, None, None] * stride
    cols = tl.arange(0, BLOCK)[None, None, :]
    row_ok3 = row_ok[:, None, None]
    x = tl.load(row_ptr + lo + cols, mask=tl.where(lo < full_end, row_ok3, False))  # early
    cutoff = tl.full([BLOCK_R], float("-inf"), tl.float32)
    t = tl.full([BLOCK_R], 1.0, tl.float32)
    if PROCESSED:
        cutoff = tl.load(cutoff_ptr + rows, mask=row_ok, other=float("-inf"))
        t = tl.load(temp_ptr + rows, mask=row_ok, other=1.0)

    slot, ok, live, key, skip, ck, pos = slot_order(logits_ptr, ids_ptr, rows, row_ok, cutoff,
                                                    V, K, stride, KP, PROCESSED)
    WS: tl.constexpr = KP - W
    keys = (sorted_keys(ck, pos, WS, G1), sorted_keys(ck, pos, WS + G1, G2),
            sorted_keys(ck, pos, WS + G1 + G2, G3))
    least = (tl.min(keys[0], axis=1), tl.min(keys[1], axis=1), tl.min(keys[2], axis=1))

    m = tl.full([BLOCK_R, 1, BLOCK], LOWEST, tl.float32)
    s = tl.zeros([BLOCK_R, 1, BLOCK], tl.float32)
    counts = (tl.zeros([BLOCK_R, G1, LANES], tl.float32),
              tl.zeros([BLOCK_R, G2, LANES], tl.float32),
              tl.zeros([BLOCK_R, G3, LANES], tl.float32))
    # prune unless the first block holds more than G1 entries per row at or above group 1's
    # smallest key (ids in the bulk of the row, as random ids: every block needs every group)
    first = x.to(tl.float32)
    if PROCESSED:
        first = tl.where(first >= cutoff[:, None, None], first, float("-inf"))
    prune = tl.sum(tl.where(first >= least[0][:, :, None], 1, 0)) <= prune_limit
    if prune:                    # two loops, no branch per block; pipelined by Triton over
        for start in tl.range(lo, full_end, BLOCK, num_stages=STAGES):   # STAGES blocks
            xb = tl.load(row_ptr + start + cols, mask=row_ok3)   # whole blocks, unmasked
            m, s, counts = fold(xb, row_ok3, m, s, counts, keys, least, cutoff, t, GROUPS,
                                LANES, LOGPROBS, PROCESSED, False, True)
    else:
        for start in tl.range(lo, full_end, BLOCK, num_stages=STAGES):
            xb = tl.load(row_ptr + start + cols, mask=row_ok3)
            m, s, counts = fold(xb, row_ok3, m, s, counts, keys, least, cutoff, t, GROUPS,
                                LANES, LOGPROBS, PROCESSED, False, False)
    if full_end < hi:                             # the row's ragged last block
        ok3 = row_ok3 & (full_end + cols < hi)
        x = tl.load(row_ptr + full_end + cols, mask=ok3, other=float("-inf"))
        m, s, counts = fold(x, ok3, m, s, counts, keys, least, cutoff, t, GROUPS, LANES,
                            LOGPROBS, PROCESSED, True, True)

    ms_ptr = (counts_ptr + splits * B * W).to(tl.pointer_type(tl.float32))   # after [S, B, W]
    if LOGPROBS:
        m_all = tl.max(m, axis=2)
        s_all = tl.sum(s * tl.exp(m - m_all[:, :, None]), axis=2)
        at = split * B + rows[:, None]
        tl.store(ms_ptr + at, m_all, mask=row_ok[:, None])
        tl.store(ms_ptr + splits * B + at, s_all, mask=row_ok[:, None])
    store_group(counts_ptr, counts[0], rows, row_ok, split, B, W, 0)
    if GROUPS > 1:
        store_group(counts_ptr, counts[1], rows, row_ok, split, B, W, G1)
    if GROUPS > 2:
        store_group(counts_ptr, counts[2], rows, row_ok, split, B, W, G1 + G2)

    tl.debug_barrier()                             # all threads' stores before the release
    ticket = tl.atomic_add(tickets_ptr + tl.program_id(0), 1)         # acq_rel, gpu scope
    if ticket == splits - 1:                       # the last: merge the S splits
        tl.atomic_xchg(tickets_ptr + tl.program_id(0), 0)             # ready for the next call
        counted = live & ~skip
        spot = rows.to(tl.int64)[:, None] * W + pos - WS   # the slot's sorted position
        count = tl.zeros([BLOCK_R, KP], tl.int32)
        for p in range(0, splits):                # .cg: from L2, written by other SMs
            count += tl.load(counts_ptr + p * B * W + spot, mask=counted, other=0,
                             cache_modifier=".cg")
        rank = tl.where(counted, count, tl.where(live & (key == float("-inf")), V, 0))
        z = key
        if PROCESSED:
            z = z / t[:, None]
        if LOGPROBS:
            lse = merged_lse(ms_ptr, rows, row_ok, splits, B)
            z = tl.where(z == float("-inf"), float("-inf"), z - lse[:, None])
        out = rows.to(tl.int64)[:, None] * K + slot[None, :]
        tl.store(values_ptr + out, tl.where(live, z, float("-inf")), mask=ok)
        tl.store(ranks_ptr + out, rank.to(tl.int64), mask=ok)
