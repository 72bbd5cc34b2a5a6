"""triton-rejection: speculative-decoding rejection sampling in one fused launch, greedy and
probabilistic requests mixed, the recovered token drawn by triton-exact's two-level race.

Request b owns the draft rows t = s_b + i, i < n_b. A probabilistic request accepts d_i iff
u_i q_i(d_i) < p_i(d_i) in float64 (q = 1 without draft probs), where
u_i = (hi 2^21 + floor(lo / 2^11)) 2^-53 comes from the two Philox words of counter
ACCEPT_BIT + b 2^20 + i. A = the first rejected position (n_b if none). At A < n_b it emits
argmax_v w(v) / e_v over the residual w = max(p_A - q_A, 0) (q one-hot at d_A without draft
probs), raced exactly as triton-exact races row b of a [B, V] probs: ``race_bits(B, V, seed)``
of sampling_harness.kernels.sample.triton_race gives the very words. A greedy request walks its
positions in
order, each an argmax of p_i (the first maximum); A = the first mismatch, which emits that
argmax. At A = n_b the bonus token follows. Slot j holds d_j (j < A), the emitted token
(j = A), then -1. With per-request seeds (an int64 [B] ``seed``), request b's counters are
those of request 0 keyed by its own seed (kernels/triton_seeds.py): its draws depend on its
seed alone, not on its place in the batch.

The one row a request needs (its residual pair, or a greedy request's first target row) may
be split over S programs, each racing (or taking the argmax of) a run of chunks; each writes
its (score, token) partial and takes a ticket, and the last merges them (the highest score,
the earliest split on ties: the whole row's race) and writes the output row. A greedy
request whose first draft matches walks its later positions in that last program.

Memory traffic per request and split: its drafts and two gathered probabilities per
position (16 n bytes); one residual row pair p_A, q_A read once where it rejects (8 V bytes
over the splits, 4 V without draft probs) plus one chunk re-read per split (2 * 4 * 4Q
bytes); a greedy request reads one target row per position up to its first mismatch
(4 V (A + 1) bytes at most); 12 B of partials per split; the output row (8 (K + 1) bytes).
Rows that do not race or walk have every load masked off. No noise in memory. Per-request
seeds: 8 bytes per request and use read. That is the floor of the family's bench
(suites/rejection/floor.py) plus the per-split re-reads.

Capturable in a CUDA graph: a call reads no device value on the host, and its tickets and
partials live in a per-stream scratch every call leaves zeroed (kernels/split_scratch.py);
the request layout (starts, counts) is made and held on the host side
(kernels/rejection/request_layout.py). A call's launch arithmetic is held per shape
(``launch_plan``).
"""

import functools
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.meta import per_request_seeds
from sampling_harness.kernels.rejection.request_layout import (
    POSITION_BITS,
    check_inputs,
    dense,
    request_layout,
    requests_of,
)
from sampling_harness.kernels.sample.triton_race import (
    chunk_noise,
    chunk_probs,
    keep_best,
    quarter_width,
    race_chunk,
)
from sampling_harness.kernels.split_scratch import (
    cdiv,
    multiprocessors,
    next_power_of_2,
    split_scratch,
)
from sampling_harness.kernels.triton_seeds import philox_key, seed_argument

ACCEPT_BIT = tl.constexpr(1 << 60)   # acceptance words: counters b 2^20 + i with bit 60 set
assert POSITION_BITS == 20           # the shift in accept_words
# rejection_exact's keyword launch settings default to these (bound at import: patching them
# changes nothing):
GPU_WARPS = 4                        # one request per program: 16-byte loads of 512-column quarters
GPU_TILE = 2048                      # columns (4 Q per request) per program on a GPU
GPU_POSITIONS = 8                    # positions (K + 1) a GPU program holds per request, at least
GPU_PROGRAMS_PER_SM = 4              # a row split until the grid has this many per SM: 81 %
                                     # of the floor at 256 x 4 x 151936 on an H100, 71 % at 1
                                     # (docs/measurements/bench.md); row loops unpipelined
CPU_TILE = 2**17                     # columns per program on a CPU (the interpreter: per program)


@triton.jit
def accept_words(seed, requests, positions):
    """(hi, lo): the two Philox words of the acceptance uniform of each (request, position)
    (per-request seeds: keyed by the request's seed, as request 0)."""
    key, request = philox_key(seed, requests[:, None])
    counter = (request.to(tl.int64) << 20) + positions + ACCEPT_BIT
    hi, lo, _, _ = tl.randint4x(key, counter)
    return hi, lo


@triton.jit
def uniform53(hi, lo):
    """u = (hi 2^21 + floor(lo / 2^11)) 2^-53 in float64: 53 random bits, u in [0, 1)."""
    bits = hi.to(tl.int64) * 2097152 + (lo >> 11).to(tl.int64)
    return bits.to(tl.float64) * 1.1102230246251565e-16


@triton.jit
def accepted_length(target_ptr, draft_probs_ptr, rows, drafts, live, stride, u, n, positions,
                    has_draft):
    """A: the first ``live`` position whose draft fails u q(d) < p(d) in float64 (q = 1
    without draft probs), n if none. Reads p(d), q(d) at the live positions only."""
    at = rows * stride + drafts
    p = tl.load(target_ptr + at, mask=live, other=0.0).to(tl.float64)
    q = tl.full(u.shape, 1.0, tl.float64)
    if has_draft:
        q = tl.load(draft_probs_ptr + at, mask=live, other=1.0).to(tl.float64)
    rejected = live & ~(u * q < p)
    return tl.min(tl.where(rejected, positions, n[:, None]), axis=1)


@triton.jit
def row_argmax(target_ptr, rows, live, stride, V, first, last, BLOCK_B: tl.constexpr,
               Q: tl.constexpr):
    """(max, argmax) of p(v) over the chunks [first, last) of each live row, the first
    maximum: columns in order, strict >. Padding past V loads 0, which never beats an
    earlier column (p >= 0 > -2)."""
    best = tl.full([BLOCK_B], -2.0, tl.float32)
    best_id = tl.zeros([BLOCK_B], tl.int64)
    for chunk in tl.range(first, last, num_stages=1):
        col0 = chunk * 4 * Q
        p0, p1, p2, p3 = chunk_probs(target_ptr, rows, live, stride, V,
                                     tl.full([1, 1], 0, tl.int32) + col0, Q)
        best, best_id = keep_best(best, best_id, p0, col0)
        best, best_id = keep_best(best, best_id, p1, col0 + Q)
        best, best_id = keep_best(best, best_id, p2, col0 + 2 * Q)
        best, best_id = keep_best(best, best_id, p3, col0 + 3 * Q)
    return best, best_id


@triton.jit
def residual_chunk(target_ptr, draft_probs_ptr, rows, live, stride, V, col0, draft_id,
                   has_draft, Q: tl.constexpr):
    """The four quarters of w = max(p - q, 0) on the chunks starting at ``col0``, in float32
    (q one-hot at ``draft_id`` without draft probs); 0 on rows that are not live."""
    p0, p1, p2, p3 = chunk_probs(target_ptr, rows, live, stride, V, col0, Q)
    if has_draft:
        q0, q1, q2, q3 = chunk_probs(draft_probs_ptr, rows, live, stride, V, col0, Q)
    else:
        d = draft_id[:, None] - col0
        j = tl.arange(0, Q)[None, :]
        q0 = tl.where(j == d, 1.0, 0.0) + tl.zeros_like(p0)
        q1 = tl.where(j + Q == d, 1.0, 0.0) + tl.zeros_like(p1)
        q2 = tl.where(j + 2 * Q == d, 1.0, 0.0) + tl.zeros_like(p2)
        q3 = tl.where(j + 3 * Q == d, 1.0, 0.0) + tl.zeros_like(p3)
    return (tl.maximum(p0 - q0, 0.0), tl.maximum(p1 - q1, 0.0), tl.maximum(p2 - q2, 0.0),
            tl.maximum(p3 - q3, 0.0))


@triton.jit
def residual_race(target_ptr, draft_probs_ptr, requests, rows, live, draft_id, seed, stride, V,
                  n_chunks, first, last, has_draft, BLOCK_B: tl.constexpr, Q: tl.constexpr):
    """triton-exact's two-level race over the chunks [first, last) of the residual of draft
    row ``rows``, with the noise of race row ``requests``: level 1 picks the chunk with the
    highest W_G / e_G (the earliest on ties), level 2 the token of that chunk with the
    highest w / e (scores never NaN: e > 0 is finite). Returns (level-1 score, token): the
    splits of a row merge by the highest score, the earliest split on ties, which is the
    whole row's race."""
    best = tl.full([BLOCK_B], -2.0, tl.float32)
    winner = tl.zeros([BLOCK_B], tl.int32) + first
    for chunk in tl.range(first, last, num_stages=1):
        w0, w1, w2, w3 = residual_chunk(target_ptr, draft_probs_ptr, rows, live, stride, V,
                                        tl.full([1, 1], 0, tl.int32) + chunk * 4 * Q,
                                        draft_id, has_draft, Q)
        mass = tl.sum(w0 + w1 + w2 + w3, axis=1)
        level1 = tl.where(mass > 0, mass / chunk_noise(seed, requests, chunk, n_chunks), -1.0)
        better = level1 > best
        best = tl.where(better, level1, best)
        winner = tl.where(better, chunk, winner)

    w0, w1, w2, w3 = residual_chunk(target_ptr, draft_probs_ptr, rows, live, stride, V,
                                    (winner * 4 * Q)[:, None], draft_id, has_draft, Q)
    return best, race_chunk(seed, requests, winner, n_chunks, w0, w1, w2, w3, BLOCK_B, Q)


@triton.jit
def merged_partials(best_ptr, part_ptr, requests, ok, B, splits):
    """(score, token) of each request over its S split partials: split 0's, replaced by each
    later split whose score is strictly higher (the earliest split wins ties), read from L2
    (.cg: other SMs wrote them)."""
    top = tl.load(best_ptr + requests, mask=ok, other=0.0, cache_modifier=".cg")
    token = tl.load(part_ptr + requests, mask=ok, other=0, cache_modifier=".cg")
    for split in range(1, splits):
        score = tl.load(best_ptr + split * B + requests, mask=ok, other=0.0, cache_modifier=".cg")
        better = score > top
        top = tl.where(better, score, top)
        token = tl.where(better, tl.load(part_ptr + split * B + requests, mask=ok, other=0,
                                         cache_modifier=".cg"), token)
    return top, token


@triton.jit(do_not_specialize=["seed", "B", "K", "V", "n_chunks", "has_draft", "per_split",
                           "splits"])
def _rejection_kernel(out_ptr, drafts_ptr, starts_ptr, counts_ptr, draft_probs_ptr, target_ptr,
                      bonus_ptr, greedy_ptr, best_ptr, part_ptr, tickets_ptr, seed, B, K, V,
                      stride, n_chunks, has_draft, per_split, splits, BLOCK_B: tl.constexpr,
                      W: tl.constexpr, Q: tl.constexpr, SPLIT: tl.constexpr):
    """Programs (request block, split): every split finds the accepted length of its
    requests (``has_draft``: a runtime flag, 0 where q is one-hot at the draft), then reads
    its run of chunks [split per_split, + per_split) of the one row it needs: the residual
    row pair of a rejecting request (its race partial), or a greedy request's first target
    row (its argmax partial). With S > 1 splits each program writes its (score, token)
    partial and takes a ticket; the request block's last program merges the S partials,
    walks a greedy request's later positions while its drafts match (whole rows, in that
    program) and writes every slot of the output rows."""
    requests = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    ok = requests < B
    start = tl.load(starts_ptr + requests, mask=ok, other=0)
    n = tl.load(counts_ptr + requests, mask=ok, other=0)
    greedy = tl.load(greedy_ptr + requests, mask=ok, other=0) != 0
    positions = tl.arange(0, W)[None, :]
    proposed = ok[:, None] & (positions < n[:, None])
    drafts = tl.load(drafts_ptr + start[:, None] + positions, mask=proposed, other=-1)

    # probabilistic requests: all positions at once
    hi, lo = accept_words(seed, requests, positions)
    sampled = accepted_length(target_ptr, draft_probs_ptr, start[:, None] + positions, drafts,
                              proposed & ~greedy[:, None], stride, uniform53(hi, lo), n,
                              positions, has_draft)
    racing = ok & ~greedy & (sampled < n)
    walking = ok & greedy & (n > 0)
    first = tl.program_id(1) * per_split
    last = tl.minimum(first + per_split, n_chunks)
    score = tl.zeros([BLOCK_B], tl.float32)
    token = tl.zeros([BLOCK_B], tl.int64)
    if tl.max(racing.to(tl.int32)) > 0:
        draft_id = tl.sum(tl.where(positions == sampled[:, None], drafts, 0), axis=1)
        best, won = residual_race(target_ptr, draft_probs_ptr, requests, start + sampled,
                                  racing, draft_id, seed, stride, V, n_chunks, first, last,
                                  has_draft, BLOCK_B, Q)
        score = tl.where(racing, best, score)
        token = tl.where(racing, won, token)
    if tl.max(walking.to(tl.int32)) > 0:    # greedy: the first position's argmax partial
        top, at = row_argmax(target_ptr, start, walking, stride, V, first, last, BLOCK_B, Q)
        score = tl.where(walking, top, score)
        token = tl.where(walking, at, token)
    if SPLIT:
        tl.store(best_ptr + tl.program_id(1) * B + requests, score, mask=ok)
        tl.store(part_ptr + tl.program_id(1) * B + requests, token, mask=ok)
        tl.debug_barrier()                                 # all threads' stores, then release
        ticket = tl.atomic_add(tickets_ptr + tl.program_id(0), 1)     # acq_rel, gpu scope
        if ticket == splits - 1:                           # the last of the block's S
            tl.atomic_xchg(tickets_ptr + tl.program_id(0), 0)         # ready for the next call
            score, token = merged_partials(best_ptr, part_ptr, requests, ok, B, splits)
            finish(out_ptr, drafts_ptr, target_ptr, bonus_ptr, requests, ok, start, n, drafts,
                   sampled, racing, walking, token, stride, V, K, n_chunks, positions,
                   BLOCK_B, Q)
    else:
        finish(out_ptr, drafts_ptr, target_ptr, bonus_ptr, requests, ok, start, n, drafts,
               sampled, racing, walking, token, stride, V, K, n_chunks, positions, BLOCK_B, Q)


@triton.jit
def finish(out_ptr, drafts_ptr, target_ptr, bonus_ptr, requests, ok, start, n, drafts, sampled,
           racing, walking, token, stride, V, K, n_chunks, positions, BLOCK_B: tl.constexpr,
           Q: tl.constexpr):
    """Write the output rows from the merged tokens: a rejecting request's recovered token;
    a greedy request's first mismatch, its later positions walked here while they match (no
    loads after the first mismatch, whole rows unpipelined: a rare path); the bonus token
    after all accepted."""
    emitted = tl.load(bonus_ptr + requests, mask=ok, other=-1)
    emitted = tl.where(racing, token, emitted)
    accepted = sampled                     # n for greedy requests (none of theirs is tested)
    first_draft = tl.sum(tl.where(positions == 0, drafts, 0), axis=1)
    miss = walking & (token != first_draft)
    accepted = tl.where(miss, 0, accepted)
    emitted = tl.where(miss, token, emitted)
    matching = walking & ~miss
    for i in range(1, K):
        live = matching & (i < n)
        if tl.max(live.to(tl.int32)) > 0:
            _, top = row_argmax(target_ptr, start + i, live, stride, V, 0, n_chunks, BLOCK_B,
                                Q)
            draft = tl.load(drafts_ptr + start + i, mask=live, other=-1)
            miss = live & (top != draft)
            accepted = tl.where(miss, i, accepted)
            emitted = tl.where(miss, top, emitted)
            matching = matching & ~miss

    row = tl.where(positions < accepted[:, None], drafts,
                   tl.where(positions == accepted[:, None], emitted[:, None], -1))
    tl.store(out_ptr + requests.to(tl.int64)[:, None] * (K + 1) + positions, row,
             mask=ok[:, None] & (positions <= K))


@triton.jit(do_not_specialize=["seed"])
def _accept_bits_kernel(words_ptr, seed, K, W: tl.constexpr):
    """The acceptance words (hi, lo) of one request's positions i < K, as int64."""
    request = tl.program_id(0) + tl.zeros([1], tl.int64)
    positions = tl.arange(0, W)[None, :]
    hi, lo = accept_words(seed, request, positions)
    at = (request[:, None] * K + positions) * 2
    tl.store(words_ptr + at, hi.to(tl.int64), mask=positions < K)
    tl.store(words_ptr + at + 1, lo.to(tl.int64), mask=positions < K)


def _launch_shape(batch: int, vocab: int, device: torch.device, tile: int, warps: int):
    """(BLOCK_B, num_warps): as many requests per program as fill a tile of 4 Q columns each.
    CPU: 2^17-token tiles, so a call is a few programs (at most the batch: the interpreter
    pays for masked requests). GPU: ``tile``-token tiles (2^11 by default), so LLM
    vocabularies (Q = 512) get one request per program, ``warps`` warps streaming its rows,
    and small ones (the acceptance-tail requests, V = 2) many requests per program; the
    tile, not the batch, sets BLOCK_B, so the batch sizes of a run share one compiled kernel
    per (V's Q, K's W). K, V and the chunk count are not specialised either."""
    width = max(1, (CPU_TILE if device.type != "cuda" else tile) // (4 * quarter_width(vocab)))
    if device.type != "cuda":
        return min(next_power_of_2(batch), width), 4
    return width, warps


def split_count(row_blocks: int, n_chunks: int, device: torch.device,
                programs_per_sm: int) -> int:
    """S: the programs a request block's row is split over, until the grid has about
    ``programs_per_sm`` programs per SM, at most one a chunk; on a CPU two where there are
    several chunks (the interpreter pays per program, but a CPU run then takes the split
    path too: the draws do not depend on S)."""
    if device.type != "cuda":
        return min(2, n_chunks)
    return max(1, min(n_chunks, cdiv(programs_per_sm * multiprocessors(device), row_blocks)))


def positions_width(width: int, device: torch.device, positions: int) -> int:
    """W: the positions a program holds per request, K + 1 rounded up to a power of two; on
    a GPU at least ``positions``, so every K < ``positions`` shares a compiled kernel."""
    least = positions if device.type == "cuda" else 1
    return max(least, next_power_of_2(width + 1))


class Plan(NamedTuple):
    """A call's launch arithmetic: grid (row blocks, splits), chunks per split, the chunk
    count, Q, BLOCK_B, W and warps."""

    row_blocks: int
    splits: int
    per_split: int
    n_chunks: int
    q: int
    block_b: int
    width: int
    warps: int


@functools.lru_cache(maxsize=256)
def launch_plan(batch: int, width: int, vocab: int, device: torch.device, warps: int, tile: int,
                positions: int, programs_per_sm: int) -> Plan:
    """The launch of a call with B = ``batch``, K = ``width`` and V = ``vocab``, computed once
    per shape and settings (plain ints: an eager call does no launch arithmetic)."""
    q = quarter_width(vocab)
    n_chunks = cdiv(vocab, 4 * q)
    block_b, warps = _launch_shape(batch, vocab, device, tile, warps)
    row_blocks = cdiv(batch, block_b)
    splits = split_count(row_blocks, n_chunks, device, programs_per_sm)
    per_split = cdiv(n_chunks, splits)
    return Plan(row_blocks, cdiv(n_chunks, per_split), per_split, n_chunks, q, block_b,
                positions_width(width, device, positions), warps)


@per_request_seeds
def rejection_exact(draft_token_ids: torch.Tensor, num_draft_tokens, draft_probs,
                    target_probs: torch.Tensor, bonus_token_ids: torch.Tensor,
                    greedy: torch.Tensor, seed, *, warps: int = GPU_WARPS,
                    tile: int = GPU_TILE, positions: int = GPU_POSITIONS,
                    programs_per_sm: int = GPU_PROGRAMS_PER_SM) -> torch.Tensor:
    """Family ``rejection``: int64 [B, K + 1], K = max(num_draft_tokens, default 0).
    ``seed``: an int, or int64 [B] per-request seeds. Launch settings (keywords, ``bench
    --launch``; on a GPU, the interpreter takes its own tiles): ``warps``, the ``tile`` of
    columns a program holds, the least ``positions`` it holds per request and
    ``programs_per_sm`` (the split of a row). None changes the draws."""
    key, requests = requests_of(num_draft_tokens)
    check_inputs(requests, draft_token_ids, draft_probs, target_probs, bonus_token_ids, greedy)
    batch, width = requests.batch, requests.width
    device = target_probs.device
    seed = seed_argument(seed, batch, device)
    out = torch.empty((batch, width + 1), dtype=torch.int64, device=device)
    if batch == 0:
        return out
    layout = request_layout(key, requests, device)
    vocab = target_probs.shape[1]
    target = dense(target_probs)
    draft = target if draft_probs is None else dense(draft_probs)
    plan = launch_plan(batch, width, vocab, device, warps, tile, positions, programs_per_sm)
    tickets, best, part = split_scratch(
        "triton-rejection", device, plan.row_blocks, plan.splits * batch,
        (torch.float32, torch.int64)) if plan.splits > 1 else (out, out, out)
    _rejection_kernel[(plan.row_blocks, plan.splits)](
        out, dense(draft_token_ids), layout[0], layout[1], draft, target,
        dense(bonus_token_ids), dense(greedy), best, part, tickets, seed, batch, width, vocab,
        target.stride(0), plan.n_chunks, int(draft_probs is not None), plan.per_split,
        plan.splits, BLOCK_B=plan.block_b, W=plan.width, Q=plan.q, SPLIT=plan.splits > 1,
        num_warps=plan.warps)
    return out


def rejection_bits(batch: int, drafts: int, seed: int, device) -> torch.Tensor:
    """The acceptance words ``rejection_exact`` draws, int64 [B, K, 2] (hi, lo) for request b,
    position i < K; the race words of request b are row b of ``race_bits(B, V, seed)``."""
    words = torch.empty((batch, drafts, 2), dtype=torch.int64, device=device)
    if batch and drafts:
        _accept_bits_kernel[(batch,)](words, seed, drafts, W=next_power_of_2(drafts))
    return words
