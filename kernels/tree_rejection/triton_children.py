"""The listed children of a tree node, masked out of its row (triton-tree-rejection).

Without draft probabilities a node's children were chosen deterministically, so where they
are all rejected the last token is drawn from the target row without their tokens. The
children's tokens are gathered once into registers (``children_of``, at most K of them)
and each quarter of a chunk is compared with them (``without_kids``); a node with more
than K children takes ``without_children``, which reads every node slot per quarter.

Memory traffic: ``children_of`` reads the request's N tokens and parents once (16 N
bytes); ``without_children`` reads them once per quarter it masks.
"""

import triton
import triton.language as tl


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
def without_kids(p, cols, kids, K: tl.constexpr):
    """p with 0 at the columns ``cols`` that are one of the ``kids`` (-1: none)."""
    hit = cols < 0
    for k in tl.static_range(K):
        kid = tl.sum(tl.where(tl.arange(0, K)[None, :] == k, kids, 0), axis=1)
        hit = hit | (cols == kid[:, None])
    return tl.where(hit, 0.0, p)


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
