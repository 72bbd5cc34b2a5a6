"""triton-tree-rejection's race at a request's last node (kernels/tree_rejection/
triton_tree_rejection.py states the law and the kernel): the residual's chunks (drawn,
max(p - C q, 0); listed, p without the node's children's tokens), level 1 over a run of
chunks (a program's split), level 2 in the winner chunk, and the whole race in one program
where the residual has no mass (then over p).

    # reads 4 V / G of the target row per program (drawn, where a child was rejected
    # there, of the draft row too); listed with more than K children, 16 N per quarter;
    # the finishing program a chunk (16 Q, drawn 32 Q), an empty residual's row (4 V)
"""

import triton
import triton.language as tl

from sampling_harness.kernels.sample.triton_race import (
    chunk_noise,
    chunk_probs,
    race_chunk,
)


@triton.jit
def drawn_weights(p, q, spent):
    """max(p - C q, 0) on a tile, in float64, as float32 (the race's scores)."""
    return tl.maximum(p.to(tl.float64) - spent[:, None] * q.to(tl.float64), 0.0).to(tl.float32)


@triton.jit
def without_kids(p0, p1, p2, p3, cols, kids, Q: tl.constexpr, K: tl.constexpr):
    """The chunk's quarters p0 .. p3 (columns ``cols``, + Q, + 2Q, + 3Q) with 0 at the
    tokens of ``kids`` (-1 past the last): each kid read out of the tile once (a reduction)
    and compared with the four quarters, for the kids there are only."""
    h0 = cols < 0
    h1 = h0
    h2 = h0
    h3 = h0
    place = tl.arange(0, K)[None, :]
    held = tl.max(tl.sum((kids >= 0).to(tl.int32), axis=1), axis=0)
    for k in range(0, held):
        kid = tl.sum(tl.where(place == k, kids, 0), axis=1)[:, None]
        h0 = h0 | (cols == kid)
        h1 = h1 | (cols + Q == kid)
        h2 = h2 | (cols + 2 * Q == kid)
        h3 = h3 | (cols + 3 * Q == kid)
    return (tl.where(h0, 0.0, p0), tl.where(h1, 0.0, p1), tl.where(h2, 0.0, p2),
            tl.where(h3, 0.0, p3))


@triton.jit
def without_children(p, cols, tokens_ptr, parents_ptr, base, ok, current, N):
    """p with 0 at the tokens of the children of ``current``, every slot read (slow path)."""
    hit = cols < 0
    for n in range(0, N):
        token = tl.load(tokens_ptr + base + n, mask=ok, other=-1)
        parent = tl.load(parents_ptr + base + n, mask=ok, other=-2)
        child = (parent == current) & (token >= 0)
        hit = hit | ((cols == token[:, None]) & child[:, None])
    return tl.where(hit, 0.0, p)


@triton.jit
def chunk_weights(target_ptr, draft_ptr, tokens_ptr, parents_ptr, base, ok, rows, live,
                  current, spent, kids, N, V, col0, DRAFT: tl.constexpr, SCAN: tl.constexpr,
                  Q: tl.constexpr, K: tl.constexpr):
    """The residual's four quarters [BLOCK_B, Q] on the chunk from ``col0``: max(p - C q, 0)
    with draft probs (p where C = 0: q not read), p without the children's tokens of
    ``current`` without (``kids``, or with SCAN every node slot)."""
    p0, p1, p2, p3 = chunk_probs(target_ptr, rows, live, V, V, col0, Q)
    if DRAFT:                            # q is read only where a child was rejected (C > 0)
        q0, q1, q2, q3 = chunk_probs(draft_ptr, rows, live & (spent > 0), V, V, col0, Q)
        w0 = drawn_weights(p0, q0, spent)
        w1 = drawn_weights(p1, q1, spent)
        w2 = drawn_weights(p2, q2, spent)
        w3 = drawn_weights(p3, q3, spent)
    else:
        w0, w1, w2, w3 = p0, p1, p2, p3
        j = tl.arange(0, Q)[None, :] + col0
        if SCAN:
            w0 = without_children(p0, j, tokens_ptr, parents_ptr, base, ok, current, N)
            w1 = without_children(p1, j + Q, tokens_ptr, parents_ptr, base, ok, current, N)
            w2 = without_children(p2, j + 2 * Q, tokens_ptr, parents_ptr, base, ok, current, N)
            w3 = without_children(p3, j + 3 * Q, tokens_ptr, parents_ptr, base, ok, current, N)
        else:
            inside = (kids >= col0) & (kids < col0 + 4 * Q)
            if tl.max(tl.max(inside.to(tl.int32), axis=1), axis=0) > 0:   # a child's token
                w0, w1, w2, w3 = without_kids(p0, p1, p2, p3, j, kids, Q, K)
    return w0, w1, w2, w3


@triton.jit
def residual_run(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests, base, ok,
                 rows, live, current, spent, kids, N, V, n_chunks, first, last,
                 BLOCK_B: tl.constexpr, Q: tl.constexpr, K: tl.constexpr,
                 DRAFT: tl.constexpr, SCAN: tl.constexpr, STAGES: tl.constexpr):
    """(score, chunk): level 1 of triton-exact's race over chunks first .. last - 1 of each
    live row's residual, the highest mass / E_chunk (the first of a tie; -1 where the mass
    is 0), with the race words of row b."""
    best = tl.full([BLOCK_B], -2.0, tl.float32)
    winner = tl.zeros([BLOCK_B], tl.int32) + first
    for chunk in tl.range(first, last, num_stages=STAGES):
        w0, w1, w2, w3 = chunk_weights(target_ptr, draft_ptr, tokens_ptr, parents_ptr, base,
                                       ok, rows, live, current, spent, kids, N, V,
                                       tl.full([1, 1], 0, tl.int32) + chunk * 4 * Q,
                                       DRAFT, SCAN, Q, K)
        mass = tl.sum(w0 + w1 + w2 + w3, axis=1)
        level1 = tl.where(mass > 0, mass / chunk_noise(seed, requests, chunk, n_chunks), -1.0)
        better = level1 > best
        best = tl.where(better, level1, best)
        winner = tl.where(better, chunk, winner)
    return best, winner


@triton.jit
def winner_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests, base, ok,
                rows, live, current, spent, kids, winner, N, V, n_chunks,
                BLOCK_B: tl.constexpr, Q: tl.constexpr, K: tl.constexpr,
                DRAFT: tl.constexpr, SCAN: tl.constexpr):
    """Level 2: the tokens of each live row's winner chunk of its residual race."""
    w0, w1, w2, w3 = chunk_weights(target_ptr, draft_ptr, tokens_ptr, parents_ptr, base, ok,
                                   rows, live, current, spent, kids, N, V,
                                   (winner * 4 * Q)[:, None], DRAFT, SCAN, Q, K)
    return race_chunk(seed, requests, winner, n_chunks, w0, w1, w2, w3, BLOCK_B, Q)


@triton.jit
def residual_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests, base, ok,
                  rows, live, current, spent, kids, N, V, n_chunks, BLOCK_B: tl.constexpr,
                  Q: tl.constexpr, K: tl.constexpr, DRAFT: tl.constexpr, SCAN: tl.constexpr,
                  STAGES: tl.constexpr):
    """(token, found): the whole two-level race in one program; ``found`` is False where
    the residual has no mass."""
    best, winner = residual_run(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed,
                                requests, base, ok, rows, live, current, spent, kids, N, V,
                                n_chunks, 0, n_chunks, BLOCK_B, Q, K, DRAFT, SCAN, STAGES)
    token = winner_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests, base,
                        ok, rows, live, current, spent, kids, winner, N, V, n_chunks, BLOCK_B,
                        Q, K, DRAFT, SCAN)
    return token, best > 0


@triton.jit
def last_token(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests, base, rows,
               drawing, current, spent, kids, count, winner, found, N, V, n_chunks,
               BLOCK_B: tl.constexpr, Q: tl.constexpr, K: tl.constexpr, DRAFT: tl.constexpr,
               STAGES: tl.constexpr):
    """The race at each drawing request's last node: level 2 in its residual's winner
    chunk, or the whole race over p where the residual has no mass (outside the contract)."""
    none = tl.full([BLOCK_B, K], -1, tl.int64)
    if DRAFT:
        token = winner_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests,
                            base, drawing, rows, drawing, current, spent, none, winner, N, V,
                            n_chunks, BLOCK_B, Q, K, DRAFT, False)
    elif tl.max(count, axis=0) > K:                       # rare: more than a program holds
        token = winner_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests,
                            base, drawing, rows, drawing, current, spent, none, winner, N, V,
                            n_chunks, BLOCK_B, Q, K, DRAFT, True)
    else:
        token = winner_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests,
                            base, drawing, rows, drawing, current, spent, kids, winner, N, V,
                            n_chunks, BLOCK_B, Q, K, DRAFT, False)
    empty = drawing & ~found
    if tl.max(empty.to(tl.int32), axis=0) > 0:
        again, _ = residual_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed,
                                 requests, base, drawing, rows, empty, current * 0 - 2,
                                 spent * 0.0, none, N, V, n_chunks, BLOCK_B, Q, K, DRAFT,
                                 False, STAGES)
        token = tl.where(empty, again, token)
    return token
