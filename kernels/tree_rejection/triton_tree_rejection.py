"""triton-tree-rejection: tree and multi-draft verification, the race at each request's last
node split over programs (listed children: one launch; drawn: a walk kernel first).

A request's node slots i = 0 .. N - 1 are visited in order: node i is tested when its parent
is the walk's current node (parents come first, siblings in draft order, so its earlier
siblings were tested and rejected). The law is torch-tree-rejection's
(kernels/tree_rejection/torch_tree_rejection.py):

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
D the batch's deepest path): each accepted token is stored into row b as it is accepted,
then the last token and -1 to the row's end. One launch (listed) or two (drawn), no host
synchronisation, no shape that depends on the data: a CUDA graph can hold the call. Held
scratch (kernels/split_scratch.py): a ticket per block of requests, G partials per request
(a float32 score, an int32 index), drawn a state row per request (last node, depth, C).

1. Walk kernel (drawn only; kernels/tree_rejection/tree_walk.py), a program per tree: the
   random requests' walks (every node's p(x_i), q(x_i) gathered at its parent's row first,
   then the walk in registers but for the residual's mass, a pass over the row pair).
       # reads 24 N + 8 V per rejection followed by another drawn child; writes the
       # accepted tokens (8 each) and the state row (24)
2. Race kernel, grid (B, G): program (b, g) takes the g-th run of chunks of the row at
   request b's last node (listed: after walking the request itself, a walk that reads no
   row; drawn: from the walk's state row, as its programmatic dependent). Random requests:
   level 1 of the race, each chunk's residual mass / chunk_noise(b, chunk), the run's best
   (strict >: the first of a tie); greedy ones (whose walk waits for the root's argmax):
   the maximum of the run of the root's row and its first column. It stores the partial
   and takes its block's ticket; the last of the G finishes: the first split holding the
   highest score (the chunk, or column, one loop over the row picks), level 2 (race_chunk)
   in the winner chunk, or where the residual has no mass the whole race over p (one
   program, outside the contract); greedy walks, a pass over the row of each node taken.
       # reads 4 V / G of the target row (drawn where a child was rejected there, of the
       # draft row too); listed 36 N (the walk, the last node's children; more than K:
       # 16 N per quarter); drawn the state row; writes a partial (8). The last: 8 G, a
       # chunk (16 Q, drawn 32 Q), an empty residual's row (4 V), greedy 16 N and 4 V per
       # node taken; writes the tokens (listed by g = 0) and the row's tail

Row passes are software-pipelined loops of a chunk (4Q columns) per trip, with the float32
and float64 sums per chunk of one loop over the row: the draws do not depend on G. Listed:
the last node's children are held in registers (at most K; more take a loop over the node
slots per quarter) and masked only in the chunks that hold one. All told, a request reads
the floor (suites/tree_rejection/bench.py) and its nodes' probabilities and slots (a few
hundred bytes, per listed program, from L2), a chunk again, the partials. No noise in memory.
H200, 64 x 16 x 151936, bench --cuda-graph, outputs as the one program per tree before:
listed 39 us, 36 % of the floor (83 us, 17 % before); drawn 181 us, 27 % (323 us, 15 %),
mostly the drawn walks' residual passes, a row pair each streamed by one program.
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
from sampling_harness.kernels.split_scratch import (
    cdiv,
    dependent_launch,
    multiprocessors,
    next_power_of_2,
    split_scratch,
    stream_handle,
)
from sampling_harness.kernels.tree_rejection.tree_walk import (
    MAX_SPLITS,
    STATE,
    _walk_kernel,
    argmax_run,
    greedy_walk,
    last_nodes,
    merged,
    partials,
    store_tail,
)
from sampling_harness.kernels.triton_seeds import seed_argument

GPU_WARPS = 4                        # per race program: 4 warps stream a run of chunks
GPU_WALK_WARPS = 4                   # per walk program (drawn: it streams row pairs)
GPU_STAGES = 5                       # chunks a row pass holds: 4 in flight, 1 reduced
GPU_PROGRAMS_PER_SM = 4              # race programs (B G) per SM, G at most the chunks
KIDS = 16                            # last node's children held in registers (power of 2)
SLOTS = 32                           # node slots the walks load and gather at once
CPU_TILE = 2**17                     # columns (trees x 4Q) per program on the interpreter
CPU_SPLITS = 2                       # G on the interpreter: the split path, few programs
# Compiled variants on a GPU follow (Q, DRAFT, seed kind) alone: B, N, V, G, n_chunks are
# runtime ints, S = SLOTS and K = KIDS fixed, the partials loaded MAX_SPLITS at a time. V is
# not specialised: V % 16 known would vectorise the row loads, and that changes the
# threads' share of each chunk's float32 and float64 sums (their summation order) against
# the one-program kernel, which did not specialise V either.


@triton.jit
def drawn_weights(p, q, spent):
    """max(p - C q, 0) on a tile, in float64, as float32 (the race's scores)."""
    return tl.maximum(p.to(tl.float64) - spent[:, None] * q.to(tl.float64), 0.0).to(tl.float32)


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


@triton.jit
def finish(out_ptr, tokens_ptr, parents_ptr, target_ptr, draft_ptr, scores, indices, seed,
           requests, ok, greedy, current, depth, spent, kids, count, B, N, V, n_chunks,
           splits, BLOCK_B: tl.constexpr, Q: tl.constexpr, K: tl.constexpr, S: tl.constexpr,
           DRAFT: tl.constexpr, STAGES: tl.constexpr):
    """BLOCK_B requests' winners over their partials, their last tokens (and the greedy
    walks), then the last token and -1 to each row's end."""
    base = requests.to(tl.int64) * N
    first_row = requests.to(tl.int64) * (N + 1)           # its root row, and its output row
    drawing = ok & ~greedy
    best, winner = merged(scores, indices, requests, ok, B, splits)
    token = tl.zeros([BLOCK_B], tl.int64)
    if tl.max(drawing.to(tl.int32), axis=0) > 0:
        token = last_token(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed, requests,
                           base, first_row + current + 1, drawing, current, spent, kids, count,
                           winner, best > 0, N, V, n_chunks, BLOCK_B, Q, K, DRAFT, STAGES)
    if tl.max(greedy.to(tl.int32), axis=0) > 0:
        top, steps = greedy_walk(out_ptr, tokens_ptr, parents_ptr, target_ptr, base,
                                 first_row, greedy, winner.to(tl.int64), N, V, n_chunks,
                                 BLOCK_B, Q, S, STAGES)
        token = tl.where(greedy, top, token)
        depth = tl.where(greedy, steps, depth)
    store_tail(out_ptr, first_row, ok, depth, token, N, S)


@triton.jit(do_not_specialize=["seed", "B", "N", "V", "n_chunks", "per_split"])
def _race_kernel(out_ptr, tickets_ptr, scratch_ptr, tokens_ptr, parents_ptr, target_ptr,
                 draft_ptr, greedy_ptr, seed, B, N, V, n_chunks, per_split,
                 BLOCK_B: tl.constexpr, Q: tl.constexpr, K: tl.constexpr, S: tl.constexpr,
                 DRAFT: tl.constexpr, STAGES: tl.constexpr, PDL: tl.constexpr):
    """Program (b, g): BLOCK_B requests' partials over their g-th run of chunks at their
    last nodes (level 1 of the residual race; greedy: the argmax of the root's row), then a
    ticket: the last of the G programs finishes the requests (``finish``). Listed children:
    each program walks the requests itself first (program g = 0 stores the tokens); drawn:
    the walk kernel's state rows (PDL: a programmatic dependent of it; greedy runs start
    before the walk ends)."""
    requests = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    ok = requests < B
    base = requests.to(tl.int64) * N
    greedy = ok & (tl.load(greedy_ptr + requests, mask=ok, other=0) != 0)
    drawing = ok & ~greedy
    splits = tl.num_programs(1)
    first = tl.program_id(1) * per_split
    last = tl.minimum(first + per_split, n_chunks)
    best = tl.full([BLOCK_B], -2.0, tl.float32)
    winner = tl.zeros([BLOCK_B], tl.int32) + first
    if tl.max(greedy.to(tl.int32), axis=0) > 0:          # the root's row: needs no walk
        top, column = argmax_run(target_ptr, requests.to(tl.int64) * (N + 1), greedy, V,
                                 first, last, BLOCK_B, Q, STAGES)
        best = tl.where(greedy, top, best)
        winner = tl.where(greedy, column, winner)
    current, depth, spent, kids, count = last_nodes(
        out_ptr, scratch_ptr, tokens_ptr, parents_ptr, target_ptr, draft_ptr, seed, requests,
        ok, drawing, B, N, V, n_chunks, splits, BLOCK_B, Q, K, S, DRAFT, STAGES, PDL)
    if tl.max(drawing.to(tl.int32), axis=0) > 0:
        rows = requests.to(tl.int64) * (N + 1) + current + 1
        if DRAFT:
            top, chunk = residual_run(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed,
                                      requests, base, drawing, rows, drawing, current, spent,
                                      kids, N, V, n_chunks, first, last, BLOCK_B, Q, K, DRAFT,
                                      False, STAGES)
        elif tl.max(count, axis=0) > K:                   # rare: more than a program holds
            top, chunk = residual_run(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed,
                                      requests, base, drawing, rows, drawing, current, spent,
                                      kids, N, V, n_chunks, first, last, BLOCK_B, Q, K, DRAFT,
                                      True, STAGES)
        else:
            top, chunk = residual_run(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed,
                                      requests, base, drawing, rows, drawing, current, spent,
                                      kids, N, V, n_chunks, first, last, BLOCK_B, Q, K, DRAFT,
                                      False, STAGES)
        best = tl.where(drawing, top, best)
        winner = tl.where(drawing, chunk, winner)
    scores, indices = partials(scratch_ptr, B, splits)
    tl.store(scores + tl.program_id(1) * B + requests, best, mask=ok)
    tl.store(indices + tl.program_id(1) * B + requests, winner, mask=ok)
    tl.debug_barrier()                                    # all threads' stores, then release
    ticket = tl.atomic_add(tickets_ptr + tl.program_id(0), 1)          # acq_rel, gpu scope
    if ticket == splits - 1:                              # the last of the block's G
        tl.atomic_xchg(tickets_ptr + tl.program_id(0), 0)              # ready for the next call
        finish(out_ptr, tokens_ptr, parents_ptr, target_ptr, draft_ptr, scores, indices, seed,
               requests, ok, greedy, current, depth, spent, kids, count, B, N, V, n_chunks,
               splits, BLOCK_B, Q, K, S, DRAFT, STAGES)


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


def _launch_shape(batch: int, vocab: int, nodes: int, device: torch.device,
                  programs_per_sm: int) -> tuple[int, int, int]:
    """(BLOCK_B, G, S). GPU: one tree per program, each request's row split into G runs of
    chunks (at most MAX_SPLITS) until the race has about ``programs_per_sm`` programs per
    SM; S = SLOTS: no compiled constant follows B or N. Interpreter (which pays per program
    and per loop trip, and compiles nothing): as many trees as fill a 2^17-column tile, at
    most the batch, a row of several chunks split in two (the split path; the draws are
    the same), S at most N rounded up to a power of two."""
    chunks = cdiv(vocab, 4 * quarter_width(vocab))
    if device.type == "cuda":
        wanted = cdiv(programs_per_sm * multiprocessors(device), batch)
        return 1, min(chunks, max(1, wanted), MAX_SPLITS.value), SLOTS
    block = max(1, min(next_power_of_2(batch), CPU_TILE // (4 * quarter_width(vocab))))
    return block, min(CPU_SPLITS, chunks), min(SLOTS, next_power_of_2(nodes))


_PLANS: dict = {}        # (input signature, stream, launch settings) -> _Plan


class _Plan:
    """What a call of one signature launches: the grids, the compiled constants and the
    held scratch (a call that grows the scratch replaces it: kernels/split_scratch.py)."""

    __slots__ = ("batch", "nodes", "vocab", "chunks", "per_split", "walk_grid", "race_grid",
                 "walk", "race", "tickets", "scratch", "launch")

    def __init__(self, batch, nodes, vocab, device, drawn, warps, stages, kids,
                 programs_per_sm, walk_warps, pdl):
        gpu = device.type == "cuda"
        q = quarter_width(vocab)
        chunks = cdiv(vocab, 4 * q)
        block, splits, slots = _launch_shape(batch, vocab, nodes, device, programs_per_sm)
        per_split = cdiv(chunks, splits)
        splits = cdiv(chunks, per_split)                  # every run holds a chunk
        blocks = cdiv(batch, block)
        self.tickets, self.scratch = split_scratch(
            "triton-tree-rejection", device, blocks, batch * (splits + STATE.value),
            (torch.int64,))
        pdl = pdl and drawn and dependent_launch(device)
        stages = stages if gpu else 1
        self.batch, self.nodes, self.vocab, self.chunks = batch, nodes, vocab, chunks
        self.per_split, self.walk_grid, self.race_grid = per_split, (blocks,), (blocks, splits)
        self.walk = {"BLOCK_B": block, "Q": q, "S": slots, "STAGES": stages, "PDL": pdl,
                     "num_warps": walk_warps if gpu else 4}
        self.race = {"BLOCK_B": block, "Q": q, "S": slots, "STAGES": stages, "PDL": pdl,
                     "K": kids if gpu else min(kids, next_power_of_2(nodes)),  # interpreter
                     "DRAFT": drawn, "num_warps": warps if gpu else 4,
                     **({"launch_pdl": True} if pdl else {})}
        self.launch = drawn


@per_request_seeds
def tree_rejection_triton(draft_token_ids: torch.Tensor, parent_ids: torch.Tensor,
                          draft_probs, target_probs: torch.Tensor, greedy: torch.Tensor,
                          seed, *, warps: int = GPU_WARPS, stages: int = GPU_STAGES,
                          kids: int = KIDS, programs_per_sm: int = GPU_PROGRAMS_PER_SM,
                          walk_warps: int = GPU_WALK_WARPS, pdl: bool = True) -> torch.Tensor:
    """Family ``tree-rejection``: int64 [B, N + 1], -1 past each request's path. ``seed``:
    an int, or int64 [B] per-request seeds. On a GPU: ``warps`` per race program and
    ``walk_warps`` per walk program (drawn), ``stages`` of the row passes' pipelines,
    ``programs_per_sm`` of the race (the split G), ``pdl``: the race as a programmatic
    dependent launch of the walk (on GPUs that take it); ``kids``: children of the last
    node held in registers (a power of two). One launch (listed) or two (drawn), no host
    synchronisation: a CUDA graph can capture the call (after one call outside it, which
    makes the held scratch: kernels/split_scratch.py). The launch of a signature seen
    before (shapes, dtypes, device, stream, settings) is taken from ``_PLANS``: its inputs
    passed ``_check`` then."""
    device = target_probs.device
    key = (draft_token_ids.shape, draft_token_ids.dtype, parent_ids.shape, parent_ids.dtype,
           target_probs.shape, target_probs.dtype, None if draft_probs is None else
           (draft_probs.shape, draft_probs.dtype), greedy.shape, greedy.dtype, device,
           stream_handle(device), warps, stages, kids, programs_per_sm, walk_warps, pdl)
    plan = _PLANS.get(key)
    if plan is None:
        _check(draft_token_ids, parent_ids, draft_probs, target_probs, greedy)
        if target_probs.shape[0] == 0:
            return torch.empty((0, draft_token_ids.shape[1] + 1), dtype=torch.int64,
                               device=device)
        plan = _Plan(target_probs.shape[0], draft_token_ids.shape[1], target_probs.shape[2],
                     device, draft_probs is not None, warps, stages, kids, programs_per_sm,
                     walk_warps, pdl)
        _PLANS[key] = plan
    batch, nodes, vocab = plan.batch, plan.nodes, plan.vocab
    seed = seed_argument(seed, batch, device)
    out = torch.empty((batch, nodes + 1), dtype=torch.int64, device=device)
    target = target_probs.contiguous()
    draft = target if draft_probs is None else draft_probs.contiguous()
    tokens, parents, greedy = (draft_token_ids.contiguous(), parent_ids.contiguous(),
                               greedy.contiguous())
    if plan.launch:
        _walk_kernel[plan.walk_grid](out, plan.scratch, tokens, parents, target, draft, greedy,
                                     seed, batch, nodes, vocab, plan.chunks,
                                     plan.race_grid[1], **plan.walk)
    _race_kernel[plan.race_grid](out, plan.tickets, plan.scratch, tokens, parents, target,
                                 draft, greedy, seed, batch, nodes, vocab, plan.chunks,
                                 plan.per_split, **plan.race)
    return out
