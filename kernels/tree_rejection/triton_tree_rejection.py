"""triton-tree-rejection: tree and multi-draft verification in one launch, G programs per
request: each walks it (drawn, the residuals' mass passes shared), each races a run of the
last node's row, the last of them finishes.

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
then the last token and -1 to the row's end. One launch, no host synchronisation, no shape
that depends on the data: a CUDA graph can hold the call. Held scratch
(kernels/split_scratch.py): per block of requests a ticket and a counter, G partials per
request (a float32 score, an int32 index), drawn two chunk-sum buffers (float64 [2,
n_chunks]) per request.

One kernel, G programs per block of requests (adjacent in a 1-D grid). Program g of request
b walks it (kernels/tree_rejection/tree_walk.py: every node's p(x_i) and q(x_i) gathered at
its parent's row first, then the walk in registers; the G walks agree, g = 0 stores the
tokens). Drawn, each residual's mass c (after a rejection followed by another sibling) is
shared: each program sums its run of the row pair's chunks, the G meet at the request's
counter, each adds all chunk sums in chunk order, as one loop over the row did (so a
request's G programs must be resident together: G at most the SM count, the blocks
dispatched in grid order; tree_walk.meet). Then the race at
the last node (kernels/tree_rejection/tree_race.py) over the g-th run of chunks of its row:
random requests, level 1, each chunk's residual mass / chunk_noise(b, chunk), the run's best
(strict >: the first of a tie); greedy ones (whose walk waits for the root's argmax, taken
before the walk) the maximum of the run of the root's row and its first column. It stores
the partial and takes its block's ticket; the last of the G finishes: the first split
holding the highest score (the chunk, or column, one loop over the row picks), level 2
(race_chunk) in the winner chunk, or where the residual has no mass the whole race over p
(one program, outside the contract); greedy walks, a pass over the row of each node taken.
    # per program: reads 24 N (the walk; listed, 12 more for the last node's children,
    # more than K: 16 N per quarter), 8 V / G of a row pair and 8 n_chunks per shared
    # mass (drawn), 4 V / G of the target row at the last node (drawn where a child was
    # rejected there, of the draft row too); writes a partial (8), its chunk sums. The
    # last: 8 G, a chunk (16 Q, drawn 32 Q), an empty residual's row (4 V), greedy 16 N
    # and 4 V per node taken; writes the tokens (by g = 0) and the row's tail

Row passes are software-pipelined loops of a chunk (4Q columns) per trip, each chunk's
float32 and float64 sums the one loop over the row made, in its order: the draws do not
depend on G. Listed: the last node's children are held in registers (at most K; more take a
loop over the node slots per quarter) and masked only in the chunks that hold one. All told,
a request reads the floor (suites/tree_rejection/bench.py), its nodes' probabilities and
slots per program (a few hundred bytes, from L2), a chunk again, the partials and chunk
sums. No noise in memory.

Compiled variants on a GPU follow (Q, DRAFT, seed kind) alone: B, N, V, G and n_chunks are
runtime ints, S = SLOTS and K = KIDS fixed, the partials loaded MAX_SPLITS at a time. V is
not specialised: V % 16 known would vectorise the row loads, which changes the threads'
share of each chunk's float32 and float64 sums (their summation order) against the
one-program kernel of 4fbd46e, which did not specialise V either.
H200, 64 x 16 x 151936, bench --cuda-graph (docs/measurements/bench.md, 2026-11-29): listed
37.3 us, 38 % of the floor, 56 % of the measured ceiling (a request: its walk about 6 us,
its run of the row 15, the merge and level 2 about 6); drawn 111 us, 43 %; eager 126 and
182 us.
"""

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.meta import per_request_seeds
from sampling_harness.kernels.sample.triton_race import quarter_width
from sampling_harness.kernels.split_scratch import (
    cdiv,
    multiprocessors,
    next_power_of_2,
    split_scratch,
    stream_handle,
)
from sampling_harness.kernels.tree_rejection.tree_race import last_token, residual_run
from sampling_harness.kernels.tree_rejection.tree_walk import (
    MAX_SPLITS,
    argmax_run,
    greedy_walk,
    last_nodes,
    merged,
    partials,
    store_tail,
)
from sampling_harness.kernels.triton_seeds import seed_argument

GPU_WARPS = 4                        # per program: 4 warps stream a run of chunks
GPU_STAGES = 3                       # chunks a row pass holds: 2 in flight, 1 reduced
GPU_PROGRAMS_PER_SM = 2              # listed programs (B G) per SM, G at most the chunks
GPU_RESIDENT_PER_SM = 6              # drawn programs (B G) per SM, G at most the SMs: two
#                                      fit an SM at once (sm_90, 4 warps, 255 registers a
#                                      thread), the rest start as requests finish
# H200 at 64x16x151936, device time with the host ahead (commit 5e99d89,
# scripts/gpu/tree_profile.py; docs/measurements/bench.md): listed 36.8 us at 3 stages and 2
# (5 programs a request; 38.0 at 5 stages, 37.5 at 3, 40.0 at 4), drawn 98.9 us at 3 stages
# and 6 (12 a request; 104.0 at 4, 102.6 at 5, 103.9 at 8; 113.9 at 5 stages and 4)
KIDS = 16                            # last node's children held in registers (power of 2)
SLOTS = 32                           # node slots the walks load and gather at once
CPU_TILE = 2**17                     # columns (trees x 4Q) per program on the interpreter
CPU_SPLITS = 2                       # G on the interpreter: the split path, few programs


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


@triton.jit(do_not_specialize=["seed", "B", "N", "V", "n_chunks", "per_split", "splits"])
def _tree_kernel(out_ptr, tickets_ptr, scratch_ptr, tokens_ptr, parents_ptr, target_ptr,
                 draft_ptr, greedy_ptr, seed, B, N, V, n_chunks, per_split, splits,
                 BLOCK_B: tl.constexpr, Q: tl.constexpr, K: tl.constexpr, S: tl.constexpr,
                 DRAFT: tl.constexpr, STAGES: tl.constexpr):
    """Program g of block b (program b G + g): BLOCK_B requests walked (split 0 stores the
    tokens; drawn, the residuals' mass shared by the G), their partials over the g-th run
    of chunks at their last nodes (level 1 of the residual race; greedy: the argmax of the
    root's row, before the walk), then a ticket: the last of the G finishes (``finish``)."""
    block = tl.program_id(0) // splits
    split = tl.program_id(0) - block * splits
    requests = block * BLOCK_B + tl.arange(0, BLOCK_B)
    ok = requests < B
    base = requests.to(tl.int64) * N
    greedy = ok & (tl.load(greedy_ptr + requests, mask=ok, other=0) != 0)
    drawing = ok & ~greedy
    first = split * per_split
    last = tl.minimum(first + per_split, n_chunks)
    best = tl.full([BLOCK_B], -2.0, tl.float32)
    winner = tl.zeros([BLOCK_B], tl.int32) + first
    if tl.max(greedy.to(tl.int32), axis=0) > 0:          # the root's row: needs no walk
        top, column = argmax_run(target_ptr, requests.to(tl.int64) * (N + 1), greedy, V,
                                 first, last, BLOCK_B, Q, STAGES)
        best = tl.where(greedy, top, best)
        winner = tl.where(greedy, column, winner)
    scores, indices, sums = partials(scratch_ptr, B, splits)
    blocks = tl.num_programs(0) // splits
    current, depth, spent, kids, count = last_nodes(
        out_ptr, sums, tickets_ptr + blocks + block, tokens_ptr, parents_ptr, target_ptr,
        draft_ptr, seed, requests, ok, drawing, split, B, N, V, n_chunks, first, last, splits,
        BLOCK_B, Q, K, S, DRAFT, STAGES)
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
    tl.store(scores + split * B + requests, best, mask=ok)
    tl.store(indices + split * B + requests, winner, mask=ok)
    tl.debug_barrier()                                    # all threads' stores, then release
    ticket = tl.atomic_add(tickets_ptr + block, 1)        # acq_rel, gpu scope
    if ticket == splits - 1:                              # the last of the block's G
        tl.atomic_xchg(tickets_ptr + block, 0)            # ready for the next call, and
        tl.atomic_xchg(tickets_ptr + blocks + block, 0)   # the walks' counter (all walked)
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


def _launch_shape(batch: int, vocab: int, nodes: int, device: torch.device, drawn: bool,
                  warps: int, programs_per_sm: int,
                  resident_per_sm: int) -> tuple[int, int, int]:
    """(BLOCK_B, G, S). GPU: one tree per program, each request's row split into G runs of
    chunks (at most MAX_SPLITS): listed, until there are about ``programs_per_sm`` programs
    per SM; drawn, whose programs wait for each other, about ``resident_per_sm`` per SM
    (fewer with more than GPU_WARPS warps) and G at most the SM count (a request's G
    resident at once, tree_walk.meet); S = SLOTS: no compiled
    constant follows B or N. Interpreter (which pays per program and per loop trip, runs
    programs one after another and compiles nothing): as many trees as fill a 2^17-column
    tile, at most the batch, listed a row of several chunks split in two (the split path;
    the draws are the same), drawn G = 1, S at most N rounded up to a power of two."""
    chunks = cdiv(vocab, 4 * quarter_width(vocab))
    if device.type == "cuda":
        sms = multiprocessors(device)
        resident = resident_per_sm if warps <= GPU_WARPS else resident_per_sm * GPU_WARPS // warps
        wanted = min(max(1, resident) * sms // batch, sms) if drawn \
            else cdiv(programs_per_sm * sms, batch)      # drawn: G <= SMs (see tree_walk.meet)
        return 1, min(chunks, max(1, wanted), MAX_SPLITS.value), SLOTS
    block = max(1, min(next_power_of_2(batch), CPU_TILE // (4 * quarter_width(vocab))))
    return block, 1 if drawn else min(CPU_SPLITS, chunks), min(SLOTS, next_power_of_2(nodes))


_PLANS: dict = {}        # (input signature, stream, launch settings) -> _Plan
PLANS_HELD = 64          # signatures held (each its scratch); more start the dict afresh


class _Plan:
    """What a call of one signature launches: the grid, the compiled constants and the
    held scratch (a call that grows the scratch retires it, kept: kernels/split_scratch.py)."""

    __slots__ = ("batch", "nodes", "vocab", "args", "grid", "consts", "tickets", "scratch")

    def __init__(self, batch, nodes, vocab, device, drawn, warps, stages, kids,
                 programs_per_sm, resident_per_sm):
        gpu = device.type == "cuda"
        q = quarter_width(vocab)
        chunks = cdiv(vocab, 4 * q)
        block, splits, slots = _launch_shape(batch, vocab, nodes, device, drawn, warps,
                                             programs_per_sm, resident_per_sm)
        per_split = cdiv(chunks, splits)
        splits = cdiv(chunks, per_split)                  # every run holds a chunk
        blocks = cdiv(batch, block)
        self.tickets, self.scratch = split_scratch(
            "triton-tree-rejection", device, 2 * blocks,
            batch * splits + (2 * batch * chunks if drawn else 0), (torch.int64,))
        self.batch, self.nodes, self.vocab = batch, nodes, vocab
        self.args = (batch, nodes, vocab, chunks, per_split, splits)
        self.grid = (blocks * splits,)
        self.consts = {"BLOCK_B": block, "Q": q, "S": slots, "DRAFT": drawn,
                       "K": kids if gpu else min(kids, next_power_of_2(nodes)),  # interpreter
                       "STAGES": stages if gpu else 1, "num_warps": warps if gpu else 4}


@per_request_seeds
def tree_rejection_triton(draft_token_ids: torch.Tensor, parent_ids: torch.Tensor,
                          draft_probs, target_probs: torch.Tensor, greedy: torch.Tensor,
                          seed, *, warps: int = GPU_WARPS, stages: int = GPU_STAGES,
                          kids: int = KIDS, programs_per_sm: int = GPU_PROGRAMS_PER_SM,
                          resident_per_sm: int = GPU_RESIDENT_PER_SM) -> torch.Tensor:
    """Family ``tree-rejection``: int64 [B, N + 1], -1 past each request's path. ``seed``:
    an int, or int64 [B] per-request seeds. On a GPU: ``warps`` per program, ``stages`` of
    the row passes' pipelines, the split G from ``programs_per_sm`` (listed) or
    ``resident_per_sm`` (drawn: each request's G programs wait for each other); ``kids``:
    children of the last node held in registers (a power of two). One launch, no host
    synchronisation: a CUDA graph can capture the call (after one call outside it, which
    makes the held scratch: kernels/split_scratch.py). A signature seen before (shapes,
    dtypes, device, stream, settings) takes its launch from ``_PLANS``: it passed
    ``_check`` then."""
    device = target_probs.device
    key = (draft_token_ids.shape, draft_token_ids.dtype, parent_ids.shape, parent_ids.dtype,
           target_probs.shape, target_probs.dtype, None if draft_probs is None else
           (draft_probs.shape, draft_probs.dtype), greedy.shape, greedy.dtype, device,
           stream_handle(device), warps, stages, kids, programs_per_sm, resident_per_sm)
    plan = _PLANS.get(key)
    if plan is None:
        _check(draft_token_ids, parent_ids, draft_probs, target_probs, greedy)
        if target_probs.shape[0] == 0:
            return torch.empty((0, draft_token_ids.shape[1] + 1), dtype=torch.int64,
                               device=device)
        plan = _Plan(target_probs.shape[0], draft_token_ids.shape[1], target_probs.shape[2],
                     device, draft_probs is not None, warps, stages, kids, programs_per_sm,
                     resident_per_sm)
        if len(_PLANS) >= PLANS_HELD:
            _PLANS.clear()
        _PLANS[key] = plan
    seed = seed_argument(seed, plan.batch, device)
    out = torch.empty((plan.batch, plan.nodes + 1), dtype=torch.int64, device=device)
    target = target_probs.contiguous()
    _tree_kernel[plan.grid](out, plan.tickets, plan.scratch, draft_token_ids.contiguous(),
                            parent_ids.contiguous(), target,
                            target if draft_probs is None else draft_probs.contiguous(),
                            greedy.contiguous(), seed, *plan.args, **plan.consts)
    return out
