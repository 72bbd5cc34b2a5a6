"""triton-tree-rejection: tree and multi-draft verification, one program per request tree.

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

Memory traffic per request: its N tokens and parents (16 N bytes); two gathered
probabilities per tested child (8 bytes); one row pair (8 V bytes) per rejection followed
by another drawn child; one target row per node a greedy request visits (4 V bytes); the
residual at the last node, its target row (4 V) and, drawn, its draft row (4 V) where a
child was rejected there, read once, plus one chunk re-read (4Q x 4 x 2 bytes); the output
row (8 (D + 1) bytes). The rows of nodes the walk never reaches are never read. No noise in
memory. Listed children cost compute, not traffic, at the last node: each column is compared
with the tokens of the node slots (skipped where the node has no children).
"""

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.meta import per_request_seeds
from sampling_harness.kernels.rejection.triton_rejection import row_argmax
from sampling_harness.kernels.sample.triton_race import (
    chunk_noise,
    chunk_probs,
    quarter_width,
    race_chunk,
)
from sampling_harness.kernels.split_scratch import cdiv, next_power_of_2
from sampling_harness.kernels.tree_rejection.torch_tree_rejection import deepest
from sampling_harness.kernels.triton_seeds import philox_key, seed_argument

COIN_BIT = tl.constexpr(1 << 60)     # coin counters: b 2^20 + index, bit 60 set
NODE_COIN = tl.constexpr(1 << 19)    # listed children: the coin of row r is index 2^19 + r
GPU_WARPS = 4                        # one tree per program: 4 warps stream its rows
GPU_SLOTS = 8                        # output slots a GPU program holds, at least: every
#                                      D < 8 shares one compiled kernel
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
                  BLOCK_B: tl.constexpr, Q: tl.constexpr):
    """c = sum_v max(p - C q, 0) of each live row, float64: one pass over the row pair."""
    total = tl.zeros([BLOCK_B], tl.float64)
    for chunk in range(0, n_chunks):
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
def without_children(p, cols, tokens_ptr, parents_ptr, base, ok, current, N):
    """p with 0 at the columns that are the token of a child of ``current`` (listed)."""
    hit = cols < 0
    for n in range(0, N):
        token = tl.load(tokens_ptr + base + n, mask=ok, other=-1)
        parent = tl.load(parents_ptr + base + n, mask=ok, other=-2)
        child = (parent == current) & (token >= 0)
        hit = hit | ((cols == token[:, None]) & child[:, None])
    return tl.where(hit, 0.0, p)


@triton.jit
def chunk_weights(target_ptr, draft_ptr, tokens_ptr, parents_ptr, base, ok, rows, live,
                  current, spent, tried, N, V, col0, has_draft, Q: tl.constexpr):
    """The residual's four quarters [BLOCK_B, Q] on the chunk from ``col0``: max(p - C q, 0)
    with draft probs (p where C = 0: q not read), p without the children's tokens of
    ``current`` without."""
    p0, p1, p2, p3 = chunk_probs(target_ptr, rows, live, V, V, col0, Q)
    if has_draft:                        # q is read only where a child was rejected (C > 0)
        q0, q1, q2, q3 = chunk_probs(draft_ptr, rows, live & (spent > 0), V, V, col0, Q)
        w0 = drawn_weights(p0, q0, spent)
        w1 = drawn_weights(p1, q1, spent)
        w2 = drawn_weights(p2, q2, spent)
        w3 = drawn_weights(p3, q3, spent)
    else:
        w0, w1, w2, w3 = p0, p1, p2, p3
        if tl.max(tried, axis=0) > 0:    # the last node has children (all rejected)
            j = tl.arange(0, Q)[None, :] + col0
            w0 = without_children(p0, j, tokens_ptr, parents_ptr, base, ok, current, N)
            w1 = without_children(p1, j + Q, tokens_ptr, parents_ptr, base, ok, current, N)
            w2 = without_children(p2, j + 2 * Q, tokens_ptr, parents_ptr, base, ok, current, N)
            w3 = without_children(p3, j + 3 * Q, tokens_ptr, parents_ptr, base, ok, current, N)
    return w0, w1, w2, w3


@triton.jit
def residual_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests, base, ok,
                  rows, live, current, spent, tried, N, V, n_chunks, has_draft,
                  BLOCK_B: tl.constexpr, Q: tl.constexpr):
    """(token, found): triton-exact's two-level race over each live row's residual, with
    the race words of row b; ``found`` is False where the residual has no mass."""
    best = tl.full([BLOCK_B], -2.0, tl.float32)
    winner = tl.zeros([BLOCK_B], tl.int32)
    for chunk in range(0, n_chunks):
        w0, w1, w2, w3 = chunk_weights(target_ptr, draft_ptr, tokens_ptr, parents_ptr, base,
                                       ok, rows, live, current, spent, tried, N, V,
                                       tl.full([1, 1], 0, tl.int32) + chunk * 4 * Q,
                                       has_draft, Q)
        mass = tl.sum(w0 + w1 + w2 + w3, axis=1)
        level1 = tl.where(mass > 0, mass / chunk_noise(seed, requests, chunk, n_chunks), -1.0)
        better = level1 > best
        best = tl.where(better, level1, best)
        winner = tl.where(better, chunk, winner)
    w0, w1, w2, w3 = chunk_weights(target_ptr, draft_ptr, tokens_ptr, parents_ptr, base, ok,
                                   rows, live, current, spent, tried, N, V,
                                   (winner * 4 * Q)[:, None], has_draft, Q)
    token = race_chunk(seed, requests, winner, n_chunks, w0, w1, w2, w3, BLOCK_B, Q)
    return token, best > 0


@triton.jit(do_not_specialize=["seed", "B", "N", "V", "W", "n_chunks", "has_draft"])
def _tree_kernel(out_ptr, tokens_ptr, parents_ptr, target_ptr, draft_ptr, greedy_ptr, seed,
                 B, N, V, W, n_chunks, has_draft, BLOCK_B: tl.constexpr, WP: tl.constexpr,
                 Q: tl.constexpr):
    """Each program: BLOCK_B request trees walked over their node slots, the output rows
    written once."""
    requests = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    ok = requests < B
    base = requests.to(tl.int64) * N                      # the request's first node slot
    first_row = requests.to(tl.int64) * (N + 1)           # its root row
    greedy = tl.load(greedy_ptr + requests, mask=ok, other=0) != 0
    slots = tl.arange(0, WP)[None, :]
    path = tl.full([BLOCK_B, WP], -1, tl.int64)
    current = tl.full([BLOCK_B], -1, tl.int64)
    depth = tl.zeros([BLOCK_B], tl.int64)
    before = tl.zeros([BLOCK_B], tl.float64)              # listed: P so far at the node
    spent = tl.zeros([BLOCK_B], tl.float64)               # drawn: C
    norm = tl.full([BLOCK_B], 1.0, tl.float64)            # drawn: c
    stale = requests < 0                                  # drawn: c needs a pass
    best = tl.full([BLOCK_B], -1, tl.int64)               # greedy: the node's argmax
    tried = tl.zeros([BLOCK_B], tl.int32)                 # children tested at the node
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
                _, top = row_argmax(target_ptr, rows, want, V, V, 0, n_chunks, BLOCK_B, Q)
                best = tl.where(want, top, best)
            if has_draft:
                q_x = tl.load(draft_ptr + rows * V + x, mask=live, other=1.0).to(tl.float64)
                need = live & stale & ~greedy
                if tl.max(need.to(tl.int32), axis=0) > 0:
                    mass = residual_mass(target_ptr, draft_ptr, rows, need, spent, V, n_chunks,
                                         BLOCK_B, Q)
                    norm = tl.where(need, mass, norm)
                    stale = stale & ~need
                w = tl.maximum(p_x - spent * q_x, 0.0)
                sampled = (w > 0) & (coin(seed, requests, i) * q_x * norm < w)
            else:
                after = before + p_x
                sampled = node_coin < after
                before = tl.where(live, after, before)
            accepted = live & tl.where(greedy, x == best, sampled)
            if has_draft:
                miss = live & ~accepted & ~greedy
                spent = tl.where(miss, spent + norm, spent)
                stale = stale | miss
            tried = tl.where(accepted, 0, tried + live.to(tl.int32))
            path = tl.where(accepted[:, None] & (slots == depth[:, None]), x[:, None], path)
            depth += accepted.to(tl.int64)
            current = tl.where(accepted, i, current)
            before = tl.where(accepted, 0.0, before)
            spent = tl.where(accepted, 0.0, spent)
            norm = tl.where(accepted, 1.0, norm)
            stale = stale & ~accepted
            best = tl.where(accepted, -1, best)
            if has_draft == 0:
                if tl.max(accepted.to(tl.int32), axis=0) > 0:
                    node_coin = tl.where(accepted, coin(seed, requests, NODE_COIN + i + 1),
                                         node_coin)

    rows = first_row + current + 1
    token = tl.zeros([BLOCK_B], tl.int64)
    drawing = ok & ~greedy
    if tl.max(drawing.to(tl.int32), axis=0) > 0:
        token, found = residual_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed,
                                     requests, base, ok, rows, drawing, current, spent, tried,
                                     N, V, n_chunks, has_draft, BLOCK_B, Q)
        empty = drawing & ~found                          # outside the contract: race p
        if tl.max(empty.to(tl.int32), axis=0) > 0:
            again, _ = residual_race(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed,
                                     requests, base, ok, rows, empty, current * 0 - 2,
                                     spent * 0.0, tried * 0, N, V, n_chunks, has_draft,
                                     BLOCK_B, Q)
            token = tl.where(empty, again, token)
    want = ok & greedy & (best < 0)
    if tl.max(want.to(tl.int32), axis=0) > 0:
        _, top = row_argmax(target_ptr, rows, want, V, V, 0, n_chunks, BLOCK_B, Q)
        best = tl.where(want, top, best)
    last = tl.where(greedy, best, token)
    path = tl.where(slots == depth[:, None], last[:, None], path)
    tl.store(out_ptr + requests.to(tl.int64)[:, None] * W + slots, path,
             mask=ok[:, None] & (slots < W))


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
                          seed, *, warps: int = GPU_WARPS) -> torch.Tensor:
    """Family ``tree-rejection``: int64 [B, D + 1]. ``seed``: an int, or int64 [B]
    per-request seeds; ``warps``: warps per program on a GPU."""
    _check(draft_token_ids, parent_ids, draft_probs, target_probs, greedy)
    batch, nodes, vocab = target_probs.shape[0], draft_token_ids.shape[1], target_probs.shape[2]
    device = target_probs.device
    width = deepest(parent_ids, draft_token_ids) + 1
    seed = seed_argument(seed, batch, device)
    out = torch.empty((batch, width), dtype=torch.int64, device=device)
    if batch == 0:
        return out
    target = target_probs.contiguous()
    draft = target if draft_probs is None else draft_probs.contiguous()
    q = quarter_width(vocab)
    block = _launch_shape(batch, vocab, device)
    _tree_kernel[(cdiv(batch, block),)](
        out, draft_token_ids.contiguous(), parent_ids.contiguous(), target, draft,
        greedy.contiguous(), seed, batch, nodes, vocab, width, cdiv(vocab, 4 * q),
        int(draft_probs is not None), BLOCK_B=block,
        WP=max(GPU_SLOTS if device.type == "cuda" else 1, next_power_of_2(width)), Q=q,
        num_warps=warps if device.type == "cuda" else 4)
    return out

