"""A copy of kernels/tree_rejection/triton_tree_rejection.py at 4fbd46e (the one program per
tree kernel), for scripts/gpu/tree_identity.py: the outputs the split kernel must equal.

triton-tree-rejection: tree and multi-draft verification, one program per request tree.

A program walks its tree (on the interpreter, a block of trees side by side) over the node
slots i = 0 .. N - 1 in order: node i is tested when its parent is the walk's current node
(parents come first, siblings in draft order, so its earlier siblings were tested and
rejected). The law is torch-tree-rejection's (kernels/tree_rejection/torch_tree_rejection.py):

* listed children (no draft probs): one coin per node, u from Philox counter
  (b 2^20 + 2^19 + r) with bit 60 set, r the node's row; child j is accepted iff
  u < p(x_1) + ... + p(x_j) in float64;
* drawn children: a coin per child (counter b 2^20 + i, bit 60); after j rejections the
  residual is w = max(p - C q, 0), C the sum of the normalisers c of the residuals
  rejected so far (c_0 = 1); child x is accepted iff w(x) > 0 and u q(x) c < w(x) in
  float64. The normaliser c = sum w is one pass over the row pair, made only when another
  child of the node is tested;
* greedy requests accept the first child whose token is the row's argmax (a pass over the
  row, once per node visited) and emit that argmax at the end;
* the last token of a random request: the two-level exponential race of triton-exact
  (kernels/sample/triton_race.py: float32 scores, noise resolved to 2^-65) over the
  residual at the last node, max(p - C q, 0) (drawn; p at a leaf) or p without the
  children's tokens (listed), with the race words of row b; p where that is empty.

Coins are u = (hi 2^21 + floor(lo / 2^11)) 2^-53 from the two Philox words (53 bits,
[0, 1)). With per-request seeds (an int64 [B] ``seed``) request b's counters are those of
request 0 keyed by its own seed (kernels/triton_seeds.py).

Output: int64 [B, N + 1], the contract's widest (any width from D + 1 to N + 1 is allowed,
D the batch's deepest path): a program stores each accepted token into row b as it is
accepted, then the last token and -1 to the row's end. The width is a function of the
input shapes alone: the wrapper launches once and returns the buffer, with no host
synchronisation and no shape that depends on the data, so a CUDA graph can hold the call.

Each pass over a row (the residual's mass, the race's level 1, a greedy argmax) is a
software-pipelined loop of one chunk (4Q columns) per trip: on a GPU the next STAGES - 1
chunks' loads are in flight while one is reduced, by the code that reduced one chunk at a
time (same layouts, same float32 and float64 sums: the outputs are unchanged). The argmax
keeps a running maximum per column position and reduces once. Listed children: the last
node's children's tokens are gathered once into registers (at most KIDS; more take a loop
over the node slots per quarter) and compared only with the chunks that hold one.

Memory traffic per request: its N tokens and parents (16 N bytes), 16 N more for the last
node's children (listed; with more than KIDS children the slot loop reads them again, 16 N
per quarter of each chunk the race computes: 64 N (n_chunks + 1)); two gathered
probabilities per tested child (8 bytes); one row pair (8 V bytes) per rejection followed by
another drawn child; one target row per node a greedy request visits (4 V); the residual at
the last node, its target row (4 V) and, drawn, its draft row (4 V) where a child was
rejected there, plus one chunk re-read (4Q x 4 x 2 bytes), and where that residual is empty
the target row again (4 V, plus a chunk); the output row (8 (N + 1)). The rows of nodes the
walk never reaches are never read. No noise in memory, no scratch, nothing read back.
"""

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.meta import per_request_seeds
from sampling_harness.kernels.sample.triton_race import (
    chunk_noise,
    chunk_probs,
    quarter_width,
    race_chunk,
)
from sampling_harness.kernels.split_scratch import cdiv, next_power_of_2
from sampling_harness.kernels.triton_seeds import philox_key, seed_argument

COIN_BIT = tl.constexpr(1 << 60)     # coin counters: b 2^20 + index, bit 60 set
NODE_COIN = tl.constexpr(1 << 19)    # listed children: the coin of row r is index 2^19 + r
GPU_WARPS = 4                        # one tree per program: 4 warps stream its rows
GPU_STAGES = 5                       # chunks a row pass holds: 4 in flight, 1 reduced
KIDS = 16                            # last node's children held in registers (power of 2)
CPU_TILE = 2**17                     # columns (trees x 4Q) per program on the interpreter


@triton.jit
def coin(seed, requests, index):
    """float64 u in [0, 1), 53 bits: the Philox words of counter (b 2^20 + index) | 2^60."""
    key, request = philox_key(seed, requests)
    counter = (request.to(tl.int64) << 20) + index + COIN_BIT
    hi, lo, _, _ = tl.randint4x(key, counter)
    bits = hi.to(tl.int64) * 2097152 + (lo >> 11).to(tl.int64)
    return bits.to(tl.float64) * 1.1102230246251565e-16


@triton.jit
def drawn_weights(p, q, spent):
    """max(p - C q, 0) on a tile, in float64, as float32 (the race's scores)."""
    return tl.maximum(p.to(tl.float64) - spent[:, None] * q.to(tl.float64), 0.0).to(tl.float32)


@triton.jit
def residual_mass(target_ptr, draft_ptr, rows, live, spent, V, n_chunks,
                  BLOCK_B: tl.constexpr, Q: tl.constexpr, STAGES: tl.constexpr):
    """c = sum_v max(p - C q, 0) of each live row, float64: one pass over the row pair."""
    total = tl.zeros([BLOCK_B], tl.float64)
    for chunk in tl.range(0, n_chunks, num_stages=STAGES):
        col0 = tl.full([1, 1], 0, tl.int32) + chunk * 4 * Q
        p0, p1, p2, p3 = chunk_probs(target_ptr, rows, live, V, V, col0, Q)
        q0, q1, q2, q3 = chunk_probs(draft_ptr, rows, live, V, V, col0, Q)
        for_tile = (tl.maximum(p0.to(tl.float64) - spent[:, None] * q0.to(tl.float64), 0.0)
                    + tl.maximum(p1.to(tl.float64) - spent[:, None] * q1.to(tl.float64), 0.0)
                    + tl.maximum(p2.to(tl.float64) - spent[:, None] * q2.to(tl.float64), 0.0)
                    + tl.maximum(p3.to(tl.float64) - spent[:, None] * q3.to(tl.float64), 0.0))
        total += tl.sum(for_tile, axis=1)
    return total


@triton.jit
def keep_columns(top, at, p, cols):
    """Fold a quarter into the running maximum of each column position (strict >: the
    earliest column of a tie is kept)."""
    better = p > top
    return tl.where(better, p, top), tl.where(better, cols, at)


@triton.jit
def row_argmax(target_ptr, rows, live, V, n_chunks, BLOCK_B: tl.constexpr, Q: tl.constexpr,
               STAGES: tl.constexpr):
    """Each live row's argmax, the first maximum: a running maximum per column position,
    no reduction per chunk, then the least column holding the maximum (padding loads 0,
    after every real column of its position: never the first maximum)."""
    j = tl.arange(0, Q)[None, :]
    top = tl.full([BLOCK_B, Q], -1.0, tl.float32)
    at = tl.zeros([BLOCK_B, Q], tl.int32) + j
    for chunk in tl.range(0, n_chunks, num_stages=STAGES):
        col0 = chunk * 4 * Q
        p0, p1, p2, p3 = chunk_probs(target_ptr, rows, live, V, V,
                                     tl.full([1, 1], 0, tl.int32) + col0, Q)
        top, at = keep_columns(top, at, p0, col0 + j)
        top, at = keep_columns(top, at, p1, col0 + Q + j)
        top, at = keep_columns(top, at, p2, col0 + 2 * Q + j)
        top, at = keep_columns(top, at, p3, col0 + 3 * Q + j)
    best = tl.max(top, axis=1)
    return tl.min(tl.where(top == best[:, None], at, 2147483647), axis=1).to(tl.int64)


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
                w0 = without_kids(p0, j, kids, K)
                w1 = without_kids(p1, j + Q, kids, K)
                w2 = without_kids(p2, j + 2 * Q, kids, K)
                w3 = without_kids(p3, j + 3 * Q, kids, K)
    return w0, w1, w2, w3


@triton.jit
def residual_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests, base, ok,
                  rows, live, current, spent, kids, N, V, n_chunks, BLOCK_B: tl.constexpr,
                  Q: tl.constexpr, K: tl.constexpr, DRAFT: tl.constexpr, SCAN: tl.constexpr,
                  STAGES: tl.constexpr):
    """(token, found): triton-exact's two-level race over each live row's residual, with
    the race words of row b; ``found`` is False where the residual has no mass."""
    best = tl.full([BLOCK_B], -2.0, tl.float32)
    winner = tl.zeros([BLOCK_B], tl.int32)
    for chunk in tl.range(0, n_chunks, num_stages=STAGES):
        w0, w1, w2, w3 = chunk_weights(target_ptr, draft_ptr, tokens_ptr, parents_ptr, base,
                                       ok, rows, live, current, spent, kids, N, V,
                                       tl.full([1, 1], 0, tl.int32) + chunk * 4 * Q,
                                       DRAFT, SCAN, Q, K)
        mass = tl.sum(w0 + w1 + w2 + w3, axis=1)
        level1 = tl.where(mass > 0, mass / chunk_noise(seed, requests, chunk, n_chunks), -1.0)
        better = level1 > best
        best = tl.where(better, level1, best)
        winner = tl.where(better, chunk, winner)
    w0, w1, w2, w3 = chunk_weights(target_ptr, draft_ptr, tokens_ptr, parents_ptr, base, ok,
                                   rows, live, current, spent, kids, N, V,
                                   (winner * 4 * Q)[:, None], DRAFT, SCAN, Q, K)
    token = race_chunk(seed, requests, winner, n_chunks, w0, w1, w2, w3, BLOCK_B, Q)
    return token, best > 0


@triton.jit
def last_token(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests, base, rows,
               drawing, current, spent, N, V, n_chunks, BLOCK_B: tl.constexpr,
               Q: tl.constexpr, K: tl.constexpr, DRAFT: tl.constexpr, STAGES: tl.constexpr):
    """The race at each drawing request's last node: over its residual, or over p where
    that has no mass (outside the contract)."""
    none = tl.full([BLOCK_B, K], -1, tl.int64)
    if DRAFT:
        token, found = residual_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed,
                                     requests, base, drawing, rows, drawing, current, spent,
                                     none, N, V, n_chunks, BLOCK_B, Q, K, DRAFT, False, STAGES)
    else:
        kids, count = children_of(tokens_ptr, parents_ptr, base, drawing, current, N,
                                  BLOCK_B, K)
        scan = tl.max(count, axis=0) > K                  # rare: more than a program holds
        if scan:
            token, found = residual_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr,
                                         seed, requests, base, drawing, rows, drawing, current,
                                         spent, none, N, V, n_chunks, BLOCK_B, Q, K, DRAFT,
                                         True, STAGES)
        else:
            token, found = residual_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr,
                                         seed, requests, base, drawing, rows, drawing, current,
                                         spent, kids, N, V, n_chunks, BLOCK_B, Q, K, DRAFT,
                                         False, STAGES)
    empty = drawing & ~found
    if tl.max(empty.to(tl.int32), axis=0) > 0:
        again, _ = residual_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed,
                                 requests, base, drawing, rows, empty, current * 0 - 2,
                                 spent * 0.0, none, N, V, n_chunks, BLOCK_B, Q, K, DRAFT,
                                 False, STAGES)
        token = tl.where(empty, again, token)
    return token


@triton.jit(do_not_specialize=["seed", "B", "N", "V", "n_chunks"])
def _tree_kernel(out_ptr, tokens_ptr, parents_ptr, target_ptr, draft_ptr,
                 greedy_ptr, seed, B, N, V, n_chunks, BLOCK_B: tl.constexpr, Q: tl.constexpr,
                 K: tl.constexpr, DRAFT: tl.constexpr, STAGES: tl.constexpr):
    """Each program: BLOCK_B request trees walked over their node slots, each accepted
    token stored as it is accepted, then the last token and -1 to the row's end."""
    requests = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    ok = requests < B
    base = requests.to(tl.int64) * N                      # the request's first node slot
    first_row = requests.to(tl.int64) * (N + 1)           # its root row, and its output row
    greedy = tl.load(greedy_ptr + requests, mask=ok, other=0) != 0
    current = tl.full([BLOCK_B], -1, tl.int64)
    depth = tl.zeros([BLOCK_B], tl.int64)
    before = tl.zeros([BLOCK_B], tl.float64)              # listed: P so far at the node
    spent = tl.zeros([BLOCK_B], tl.float64)               # drawn: C
    norm = tl.full([BLOCK_B], 1.0, tl.float64)            # drawn: c
    stale = requests < 0                                  # drawn: c needs a pass
    best = tl.full([BLOCK_B], -1, tl.int64)               # greedy: the node's argmax
    node_coin = coin(seed, requests, NODE_COIN)
    for i in range(0, N):
        x = tl.load(tokens_ptr + base + i, mask=ok, other=-1)
        parent = tl.load(parents_ptr + base + i, mask=ok, other=-2)
        live = ok & (x >= 0) & (parent == current)
        if tl.max(live.to(tl.int32), axis=0) > 0:
            rows = first_row + current + 1
            p_x = tl.load(target_ptr + rows * V + x, mask=live, other=0.0).to(tl.float64)
            want = live & greedy & (best < 0)
            if tl.max(want.to(tl.int32), axis=0) > 0:
                top = row_argmax(target_ptr, rows, want, V, n_chunks, BLOCK_B, Q, STAGES)
                best = tl.where(want, top, best)
            if DRAFT:
                q_x = tl.load(draft_ptr + rows * V + x, mask=live, other=1.0).to(tl.float64)
                need = live & stale & ~greedy
                if tl.max(need.to(tl.int32), axis=0) > 0:
                    mass = residual_mass(target_ptr, draft_ptr, rows, need, spent, V, n_chunks,
                                         BLOCK_B, Q, STAGES)
                    norm = tl.where(need, mass, norm)
                    stale = stale & ~need
                w = tl.maximum(p_x - spent * q_x, 0.0)
                sampled = (w > 0) & (coin(seed, requests, i) * q_x * norm < w)
            else:
                after = before + p_x
                sampled = node_coin < after
                before = tl.where(live, after, before)
            accepted = live & tl.where(greedy, x == best, sampled)
            if DRAFT:
                miss = live & ~accepted & ~greedy
                spent = tl.where(miss, spent + norm, spent)
                stale = stale | miss
            tl.store(out_ptr + first_row + depth, x, mask=accepted)
            depth += accepted.to(tl.int64)
            current = tl.where(accepted, i, current)
            before = tl.where(accepted, 0.0, before)
            spent = tl.where(accepted, 0.0, spent)
            norm = tl.where(accepted, 1.0, norm)
            stale = stale & ~accepted
            best = tl.where(accepted, -1, best)
            if not DRAFT:
                if tl.max(accepted.to(tl.int32), axis=0) > 0:
                    node_coin = tl.where(accepted, coin(seed, requests, NODE_COIN + i + 1),
                                         node_coin)

    rows = first_row + current + 1
    token = tl.zeros([BLOCK_B], tl.int64)
    drawing = ok & ~greedy
    if tl.max(drawing.to(tl.int32), axis=0) > 0:
        token = last_token(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests,
                           base, rows, drawing, current, spent, N, V, n_chunks, BLOCK_B, Q, K,
                           DRAFT, STAGES)
    want = ok & greedy & (best < 0)
    if tl.max(want.to(tl.int32), axis=0) > 0:
        top = row_argmax(target_ptr, rows, want, V, n_chunks, BLOCK_B, Q, STAGES)
        best = tl.where(want, top, best)
    last = tl.where(greedy, best, token)
    for s0 in range(0, N + 1, K):                         # the last token, then -1
        slots = s0 + tl.arange(0, K)[None, :]
        tl.store(out_ptr + first_row[:, None] + slots,
                 tl.where(slots == depth[:, None], last[:, None], -1),
                 mask=ok[:, None] & (slots >= depth[:, None]) & (slots <= N))


def _check(tokens, parents, draft_probs, target_probs, greedy) -> None:
    """ValueError (one line) on a dtype or shape outside the contract."""
    batch, nodes = tokens.shape if tokens.dim() == 2 else (-1, -1)
    if tokens.dtype != torch.int64 or parents.dtype != torch.int64 or tokens.dim() != 2 \
            or parents.shape != tokens.shape:
        raise ValueError(f"draft_token_ids and parent_ids must be int64 [B, N], got "
                         f"{tokens.dtype} {tuple(tokens.shape)} and {parents.dtype} "
                         f"{tuple(parents.shape)}")
    if target_probs.dtype != torch.float32 or target_probs.dim() != 3 \
            or target_probs.shape[:2] != (batch, nodes + 1):
        raise ValueError(f"target_probs must be float32 [B={batch}, N+1={nodes + 1}, V], got "
                         f"{target_probs.dtype} {tuple(target_probs.shape)}")
    if draft_probs is not None and (draft_probs.dtype != torch.float32
                                    or draft_probs.shape != target_probs.shape):
        raise ValueError(f"draft_probs must be None or float32 {tuple(target_probs.shape)}")
    if greedy.dtype != torch.bool or tuple(greedy.shape) != (batch,):
        raise ValueError(f"greedy must be bool [{batch}], got {greedy.dtype} "
                         f"{tuple(greedy.shape)}")
    if nodes >= 2**19:
        raise ValueError(f"at most 2^19 - 1 nodes per request, got N = {nodes}")


def _launch_shape(batch: int, vocab: int, device: torch.device) -> int:
    """BLOCK_B: one tree per program on a GPU; on the interpreter (which pays per program
    and per loop trip) as many as fill a 2^17-column tile, at most the batch."""
    if device.type == "cuda":
        return 1
    return max(1, min(next_power_of_2(batch), CPU_TILE // (4 * quarter_width(vocab))))


@per_request_seeds
def tree_rejection_triton(draft_token_ids: torch.Tensor, parent_ids: torch.Tensor,
                          draft_probs, target_probs: torch.Tensor, greedy: torch.Tensor,
                          seed, *, warps: int = GPU_WARPS, stages: int = GPU_STAGES,
                          kids: int = KIDS) -> torch.Tensor:
    """Family ``tree-rejection``: int64 [B, N + 1], -1 past each request's path. ``seed``:
    an int, or int64 [B] per-request seeds. On a GPU: ``warps`` per program, ``stages`` of
    the row passes' pipelines; ``kids``: children of the last node held in registers (a
    power of two). One launch, no host synchronisation: a CUDA graph can capture it."""
    _check(draft_token_ids, parent_ids, draft_probs, target_probs, greedy)
    batch, nodes, vocab = target_probs.shape[0], draft_token_ids.shape[1], target_probs.shape[2]
    device = target_probs.device
    seed = seed_argument(seed, batch, device)
    out = torch.empty((batch, nodes + 1), dtype=torch.int64, device=device)
    if batch == 0:
        return out
    target = target_probs.contiguous()
    draft = target if draft_probs is None else draft_probs.contiguous()
    q = quarter_width(vocab)
    block = _launch_shape(batch, vocab, device)
    gpu = device.type == "cuda"
    _tree_kernel[(cdiv(batch, block),)](
        out, draft_token_ids.contiguous(), parent_ids.contiguous(), target, draft,
        greedy.contiguous(), seed, batch, nodes, vocab, cdiv(vocab, 4 * q), BLOCK_B=block,
        Q=q, K=kids if gpu else min(kids, next_power_of_2(nodes)),   # interpreter: per step
        DRAFT=draft_probs is not None, STAGES=stages if gpu else 1,
        num_warps=warps if gpu else 4)
    return out
