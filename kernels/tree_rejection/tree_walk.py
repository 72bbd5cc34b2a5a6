"""triton-tree-rejection's walks (kernels/tree_rejection/triton_tree_rejection.py states the
law, the draws and the kernel): a random request's walk over its node slots, with the
residual's mass of a drawn walk shared by the G programs of its request; a greedy request's
walk from its root's argmax; the argmax passes (a run of chunks, or a row); the scratch
(partials, chunk sums) and the output tail.

Node i is only ever tested under its own parent (parents come first, siblings in draft
order), so its gathered probabilities and its coin do not depend on the walk: a block of S
slots is loaded and gathered as tiles at once, then walked in registers. The coins are those
of the law: drawn, counter b 2^20 + i; listed, b 2^20 + 2^19 + (parent + 1), the coin of the
parent's row. Only the residual's mass (drawn, after a rejection followed by another
sibling) depends on the walk and reads a row pair.

Every program of a request walks it (the walks agree: same inputs, same sums). The residual
mass c = sum_v max(p - C q, 0) is the float64 sum of the row pair's chunks, added in chunk
order from 0 (what one loop over the row did): each of the G programs sums the chunks of its
own run (each chunk as one tile, as before) and stores the chunk sums, the G meet at their
request block's counter (an atomic each, then a wait for the others), and each adds all the
chunk sums in chunk order: the same c, bit for bit, in every program and as before. The G
programs of a request are adjacent in the grid and G is at most the SM count (a program
that launches at all fits once on every SM): with the blocks dispatched in grid order, the
programs before a request's last one finish or are its own, so all G become resident
together. G = 1 on the interpreter, which runs programs one after another.

    # reads per program:  tokens and parents (16 N), each node's p(x_i) and q(x_i) at its
    #   parent's row (8 N); per rejection followed by another drawn child, 8 V / G of the
    #   row pair and the n_chunks chunk sums (8 each, from L2); writes n_chunks / G sums

The scratch: the race's partials (G per request, a float32 score and an int32 index), then
two chunk-sum buffers per request (float64 [2, B, n_chunks], drawn: pass k writes buffer
k % 2, so a program a pass ahead never overwrites sums another still adds).
"""

import triton
import triton.language as tl

from sampling_harness.kernels.sample.triton_race import chunk_probs
from sampling_harness.kernels.triton_seeds import philox_key

COIN_BIT = tl.constexpr(1 << 60)     # coin counters: b 2^20 + index, bit 60 set
NODE_COIN = tl.constexpr(1 << 19)    # listed children: the coin of row r is index 2^19 + r
MAX_SPLITS = tl.constexpr(64)        # G at most: the partials a finishing program loads


@triton.jit
def coin(seed, requests, index):
    """float64 u in [0, 1), 53 bits: the Philox words of counter (b 2^20 + index) | 2^60."""
    key, request = philox_key(seed, requests)
    counter = (request.to(tl.int64) << 20) + index + COIN_BIT
    hi, lo, _, _ = tl.randint4x(key, counter)
    bits = hi.to(tl.int64) * 2097152 + (lo >> 11).to(tl.int64)
    return bits.to(tl.float64) * 1.1102230246251565e-16


@triton.jit
def meet(bar_ptr, arrived):
    """Wait at a request block's counter until ``arrived`` programs came: each program's
    stores, then its atomic add (release), then atomic reads until the count is reached
    (acquire). Deadlock-free only while the block's G programs can be resident together
    (G at most the SM count, blocks dispatched in order: module docstring)."""
    tl.debug_barrier()                                    # all threads' stores, then release
    seen = tl.atomic_add(bar_ptr, 1) + 1                  # acq_rel, gpu scope
    while seen < arrived:
        seen = tl.atomic_add(bar_ptr, 0)
    tl.debug_barrier()                                    # every thread after the acquire


@triton.jit
def chunk_sums(at, c0, need, n_chunks):
    """The stored sums of chunks c0 .. c0 + 7 (0 past the last: adding it changes nothing),
    read past the SM's L1 (other programs wrote them), all eight in flight at once."""
    live = need.to(tl.int32) * 0 + c0
    return (tl.load(at + c0, mask=need & (live < n_chunks), other=0.0, volatile=True),
            tl.load(at + c0 + 1, mask=need & (live + 1 < n_chunks), other=0.0, volatile=True),
            tl.load(at + c0 + 2, mask=need & (live + 2 < n_chunks), other=0.0, volatile=True),
            tl.load(at + c0 + 3, mask=need & (live + 3 < n_chunks), other=0.0, volatile=True),
            tl.load(at + c0 + 4, mask=need & (live + 4 < n_chunks), other=0.0, volatile=True),
            tl.load(at + c0 + 5, mask=need & (live + 5 < n_chunks), other=0.0, volatile=True),
            tl.load(at + c0 + 6, mask=need & (live + 6 < n_chunks), other=0.0, volatile=True),
            tl.load(at + c0 + 7, mask=need & (live + 7 < n_chunks), other=0.0, volatile=True))


@triton.jit
def in_order(total, s0, s1, s2, s3, s4, s5, s6, s7):
    """total + s0 + ... + s7, added left to right."""
    return (((((((total + s0) + s1) + s2) + s3) + s4) + s5) + s6) + s7


@triton.jit
def shared_mass(target_ptr, draft_ptr, sums_ptr, bar_ptr, rows, need, spent, requests, passes,
                B, V, n_chunks, first, last, splits, BLOCK_B: tl.constexpr, Q: tl.constexpr,
                STAGES: tl.constexpr):
    """c = sum_v max(p - C q, 0) of each ``need`` row, float64 (module docstring): this
    program's chunks first .. last - 1 summed and stored (buffer ``passes`` % 2), the G
    programs met (pass ``passes``, from 1), then every chunk sum added in chunk order."""
    at = sums_ptr + ((passes % 2) * B + requests.to(tl.int64)) * n_chunks
    for chunk in tl.range(first, last, num_stages=STAGES):
        col0 = tl.full([1, 1], 0, tl.int32) + chunk * 4 * Q
        p0, p1, p2, p3 = chunk_probs(target_ptr, rows, need, V, V, col0, Q)
        q0, q1, q2, q3 = chunk_probs(draft_ptr, rows, need, V, V, col0, Q)
        for_tile = (tl.maximum(p0.to(tl.float64) - spent[:, None] * q0.to(tl.float64), 0.0)
                    + tl.maximum(p1.to(tl.float64) - spent[:, None] * q1.to(tl.float64), 0.0)
                    + tl.maximum(p2.to(tl.float64) - spent[:, None] * q2.to(tl.float64), 0.0)
                    + tl.maximum(p3.to(tl.float64) - spent[:, None] * q3.to(tl.float64), 0.0))
        tl.store(at + chunk, tl.sum(for_tile, axis=1), mask=need)
    if splits > 1:
        meet(bar_ptr, passes * splits)
    total = tl.zeros([BLOCK_B], tl.float64)
    for c0 in range(0, n_chunks, 32):                     # 32 loads in flight, then the adds
        s0, s1, s2, s3, s4, s5, s6, s7 = chunk_sums(at, c0, need, n_chunks)
        s8, s9, s10, s11, s12, s13, s14, s15 = chunk_sums(at, c0 + 8, need, n_chunks)
        r0, r1, r2, r3, r4, r5, r6, r7 = chunk_sums(at, c0 + 16, need, n_chunks)
        r8, r9, r10, r11, r12, r13, r14, r15 = chunk_sums(at, c0 + 24, need, n_chunks)
        total = in_order(in_order(total, s0, s1, s2, s3, s4, s5, s6, s7),
                         s8, s9, s10, s11, s12, s13, s14, s15)
        total = in_order(in_order(total, r0, r1, r2, r3, r4, r5, r6, r7),
                         r8, r9, r10, r11, r12, r13, r14, r15)
    return total


@triton.jit
def keep_columns(top, at, p, cols):
    """Fold a quarter into the running maximum of each column position (strict >: the
    earliest column of a tie is kept)."""
    better = p > top
    return tl.where(better, p, top), tl.where(better, cols, at)


@triton.jit
def argmax_run(target_ptr, rows, live, V, first, last, BLOCK_B: tl.constexpr,
               Q: tl.constexpr, STAGES: tl.constexpr):
    """(maximum, column) of each live row over chunks first .. last - 1, the first maximum:
    a running maximum per column position, no reduction per chunk, then the least column
    holding the maximum (padding loads 0, after every real column of its position: never
    the first maximum)."""
    j = tl.arange(0, Q)[None, :]
    top = tl.full([BLOCK_B, Q], -1.0, tl.float32)
    at = tl.zeros([BLOCK_B, Q], tl.int32) + first * 4 * Q + j
    for chunk in tl.range(first, last, num_stages=STAGES):
        col0 = chunk * 4 * Q
        p0, p1, p2, p3 = chunk_probs(target_ptr, rows, live, V, V,
                                     tl.full([1, 1], 0, tl.int32) + col0, Q)
        top, at = keep_columns(top, at, p0, col0 + j)
        top, at = keep_columns(top, at, p1, col0 + Q + j)
        top, at = keep_columns(top, at, p2, col0 + 2 * Q + j)
        top, at = keep_columns(top, at, p3, col0 + 3 * Q + j)
    best = tl.max(top, axis=1)
    return best, tl.min(tl.where(top == best[:, None], at, 2147483647), axis=1)


@triton.jit
def row_argmax(target_ptr, rows, live, V, n_chunks, BLOCK_B: tl.constexpr, Q: tl.constexpr,
               STAGES: tl.constexpr):
    """Each live row's argmax (the first maximum), as int64: one pass over the row."""
    _, column = argmax_run(target_ptr, rows, live, V, 0, n_chunks, BLOCK_B, Q, STAGES)
    return column.to(tl.int64)


@triton.jit
def children_of(tokens_ptr, parents_ptr, base, ok, current, N, BLOCK_B: tl.constexpr,
                K: tl.constexpr):
    """(kids [BLOCK_B, K], count [BLOCK_B]): the tokens of the children of ``current`` in
    slot order, -1 after the last (the first K kept), and how many there are."""
    kids = tl.full([BLOCK_B, K], -1, tl.int64)
    count = tl.zeros([BLOCK_B], tl.int32)
    place = tl.arange(0, K)[None, None, :]
    for s0 in range(0, N, K):
        slot = s0 + tl.arange(0, K)[None, :]
        inside = ok[:, None] & (slot < N)
        token = tl.load(tokens_ptr + base[:, None] + slot, mask=inside, other=-1)
        parent = tl.load(parents_ptr + base[:, None] + slot, mask=inside, other=-2)
        child = (parent == current[:, None]) & (token >= 0)
        at = count[:, None] + tl.cumsum(child.to(tl.int32), axis=1) - 1
        moved = (child & (at < K))[:, :, None] & (at[:, :, None] == place)   # [B, slot, K]
        kids = tl.where(tl.max(moved.to(tl.int32), axis=1) > 0,
                        tl.sum(tl.where(moved, token[:, :, None], 0), axis=1), kids)
        count += tl.sum(child.to(tl.int32), axis=1)
    return kids, count


@triton.jit
def pick(tile, slot, s):
    """Column ``s`` of a [BLOCK_B, S] tile (``slot``: its column indices), per row."""
    return tl.sum(tl.where(slot == s, tile, 0), axis=1)


@triton.jit
def slot_block(tokens_ptr, parents_ptr, base, ok, s0, N, S: tl.constexpr):
    """(slots, tokens, parents) [BLOCK_B, S] of node slots s0 .. s0 + S - 1 (-1 past N)."""
    slot = s0 + tl.arange(0, S)[None, :]
    inside = ok[:, None] & (slot < N)
    token = tl.load(tokens_ptr + base[:, None] + slot, mask=inside, other=-1)
    parent = tl.load(parents_ptr + base[:, None] + slot, mask=inside, other=-2)
    return slot, token, parent


@triton.jit
def gathered(probs_ptr, first_row, slot, token, parent, valid, V, other):
    """Each slot's probability of its token at its parent's row (parent + 1), float64."""
    rows = first_row[:, None] + parent + 1
    return tl.load(probs_ptr + rows * V + token, mask=valid, other=other).to(tl.float64)


@triton.jit
def walk(out_ptr, sums_ptr, bar_ptr, tokens_ptr, parents_ptr, target_ptr, draft_ptr, seed,
         requests, walking, storing, B, N, V, n_chunks, first, last, splits,
         BLOCK_B: tl.constexpr, Q: tl.constexpr, S: tl.constexpr, DRAFT: tl.constexpr,
         STAGES: tl.constexpr):
    """(last node, depth, C) of each walking request, walked over its node slots (S at a
    time, gathered first); the accepted tokens stored where ``storing``; drawn, each
    residual's mass shared by the G programs (``shared_mass``: chunks first .. last - 1
    here)."""
    base = requests.to(tl.int64) * N                      # the request's first node slot
    first_row = requests.to(tl.int64) * (N + 1)           # its root row, and its output row
    current = tl.full([BLOCK_B], -1, tl.int64)
    depth = tl.zeros([BLOCK_B], tl.int64)
    before = tl.zeros([BLOCK_B], tl.float64)              # listed: P so far at the node
    spent = tl.zeros([BLOCK_B], tl.float64)               # drawn: C
    norm = tl.full([BLOCK_B], 1.0, tl.float64)            # drawn: c
    stale = requests < 0                                  # drawn: c needs a pass
    passes = tl.program_id(0) * 0                         # drawn: passes made so far
    for s0 in range(0, N, S):
        slot, token, parent = slot_block(tokens_ptr, parents_ptr, base, walking, s0, N, S)
        valid = (token >= 0) & (parent >= -1) & (parent < slot)
        p_all = gathered(target_ptr, first_row, slot, token, parent, valid, V, 0.0)
        if DRAFT:
            q_all = gathered(draft_ptr, first_row, slot, token, parent, valid, V, 1.0)
            u_all = coin(seed, requests[:, None], slot)
        else:
            q_all = p_all
            u_all = coin(seed, requests[:, None], NODE_COIN + parent + 1)
        for i in range(s0, tl.minimum(s0 + S, N)):
            x = pick(token, slot, i)
            live = walking & (x >= 0) & (pick(parent, slot, i) == current)
            if tl.max(live.to(tl.int32), axis=0) > 0:
                p_x = pick(p_all, slot, i)
                u = pick(u_all, slot, i)
                if DRAFT:
                    q_x = pick(q_all, slot, i)
                    need = live & stale
                    if tl.max(need.to(tl.int32), axis=0) > 0:
                        passes += 1
                        mass = shared_mass(target_ptr, draft_ptr, sums_ptr, bar_ptr,
                                           first_row + current + 1, need, spent, requests,
                                           passes, B, V, n_chunks, first, last, splits,
                                           BLOCK_B, Q, STAGES)
                        norm = tl.where(need, mass, norm)
                        stale = stale & ~need
                    w = tl.maximum(p_x - spent * q_x, 0.0)
                    accepted = live & (w > 0) & (u * q_x * norm < w)
                    miss = live & ~accepted
                    spent = tl.where(miss, spent + norm, spent)
                    stale = stale | miss
                else:
                    after = before + p_x
                    accepted = live & (u < after)
                    before = tl.where(live, after, before)
                tl.store(out_ptr + first_row + depth, x, mask=accepted & storing)
                depth += accepted.to(tl.int64)
                current = tl.where(accepted, i, current)
                before = tl.where(accepted, 0.0, before)
                spent = tl.where(accepted, 0.0, spent)
                norm = tl.where(accepted, 1.0, norm)
                stale = stale & ~accepted
    return current, depth, spent


@triton.jit
def last_nodes(out_ptr, sums_ptr, bar_ptr, tokens_ptr, parents_ptr, target_ptr, draft_ptr,
               seed, requests, ok, drawing, split, B, N, V, n_chunks, first, last, splits,
               BLOCK_B: tl.constexpr, Q: tl.constexpr, K: tl.constexpr, S: tl.constexpr,
               DRAFT: tl.constexpr, STAGES: tl.constexpr):
    """(last node, depth, C, kids, count) of each random request, walked by each of its
    programs (split 0 stores the tokens); listed, the last node's children too."""
    kids = tl.full([BLOCK_B, K], -1, tl.int64)
    count = tl.zeros([BLOCK_B], tl.int32)
    storing = drawing & (requests * 0 + split == 0)
    current, depth, spent = walk(out_ptr, sums_ptr, bar_ptr, tokens_ptr, parents_ptr,
                                 target_ptr, draft_ptr, seed, requests, drawing, storing, B,
                                 N, V, n_chunks, first, last, splits, BLOCK_B, Q, S, DRAFT,
                                 STAGES)
    if not DRAFT:
        kids, count = children_of(tokens_ptr, parents_ptr, requests.to(tl.int64) * N,
                                  drawing, current, N, BLOCK_B, K)
    return current, depth, spent, kids, count


@triton.jit
def greedy_walk(out_ptr, tokens_ptr, parents_ptr, target_ptr, base, first_row, walking, best,
                N, V, n_chunks, BLOCK_B: tl.constexpr, Q: tl.constexpr, S: tl.constexpr,
                STAGES: tl.constexpr):
    """(argmax at the last node, depth) of each greedy request, from the root's argmax
    ``best``: it moves to the first child of its node whose token is that node's argmax,
    stores the token and takes the child's argmax (a pass over its row). A block of slots
    holding no such child is passed over at once."""
    current = tl.full([BLOCK_B], -1, tl.int64)
    depth = tl.zeros([BLOCK_B], tl.int64)
    for s0 in range(0, N, S):
        slot, token, parent = slot_block(tokens_ptr, parents_ptr, base, walking, s0, N, S)
        moves = walking[:, None] & (token >= 0) & (parent == current[:, None]) \
            & (token == best[:, None])
        if tl.max(tl.max(moves.to(tl.int32), axis=1), axis=0) > 0:
            for i in range(s0, tl.minimum(s0 + S, N)):
                x = pick(token, slot, i)
                accepted = walking & (x >= 0) & (pick(parent, slot, i) == current) \
                    & (x == best)
                if tl.max(accepted.to(tl.int32), axis=0) > 0:
                    tl.store(out_ptr + first_row + depth, x, mask=accepted)
                    depth += accepted.to(tl.int64)
                    current = tl.where(accepted, i, current)
                    top = row_argmax(target_ptr, first_row + i + 1, accepted, V, n_chunks,
                                     BLOCK_B, Q, STAGES)
                    best = tl.where(accepted, top, best)
    return best, depth


@triton.jit
def partials(scratch_ptr, B, splits):
    """The scratch: the race's partials, scores (float32 [G, B]) then indices (int32
    [G, B]), then the chunk sums (float64 [2, B, n_chunks])."""
    scores = scratch_ptr.to(tl.pointer_type(tl.float32))
    sums = (scratch_ptr + splits * B).to(tl.pointer_type(tl.float64))
    return scores, scores.to(tl.pointer_type(tl.int32)) + splits * B, sums


@triton.jit
def merged(scores, indices, requests, ok, B, splits):
    """(score, index) of each request over its G partials (G <= MAX_SPLITS), loaded at
    once: the first split holding the highest score (as a loop over the splits with
    strict > keeps it)."""
    split = tl.arange(0, MAX_SPLITS)[None, :]
    there = ok[:, None] & (split < splits)
    at = split * B + requests[:, None]
    score = tl.load(scores + at, mask=there, other=-3.0)  # partials are >= -2
    best = tl.max(score, axis=1)
    first = tl.min(tl.where(score == best[:, None], split, MAX_SPLITS), axis=1)
    index = tl.load(indices + at, mask=there, other=0)
    return best, tl.sum(tl.where(split == first[:, None], index, 0), axis=1)


@triton.jit
def store_tail(out_ptr, first_row, ok, depth, token, N, S: tl.constexpr):
    """Each output row's last token at its depth, then -1 to the row's end (N + 1 slots)."""
    for s0 in range(0, N + 1, S):
        slots = s0 + tl.arange(0, S)[None, :]
        tl.store(out_ptr + first_row[:, None] + slots,
                 tl.where(slots == depth[:, None], token[:, None], -1),
                 mask=ok[:, None] & (slots >= depth[:, None]) & (slots <= N))
