"""triton-exact: the exponential race in two levels, fused into one pass over probs.

token = argmin_i q_i / p_i with q_i ~ Exp(1) iid. Group the tokens of a row into chunks G of
4Q columns. Then min_{i in G} q_i / p_i ~ Exp(rate P_G), P_G = sum_{i in G} p_i, and which
token attains it is independent of the minimum, with law p_i / P_G. So the race is run
exactly in two levels: (1) chunks race with one Exp(1) variate q_G each, score P_G / q_G;
(2) the tokens of the winning chunk race with their own variates. Level 1 is a sum per
chunk, so the pass over probs is memory-bound; level 2 re-reads one chunk per row (per split).

Noise: chunk variates come from Philox counter row * n_chunks + chunk with bit 61 set, two
words (64 bits) each. Token variates: counter row * n_chunks * Q + chunk * Q + j gives four
words, the main words of columns 4Qc + Qk + j (k = 0..3); a second word (bit 62 set) refines
x, the uniform's distance from the nearer end of (0, 1), wherever x < 2^-20. So q resolves
down to 2^-65 (float32 ``exponential_``: 2^-24, float64: 2^-53) and up to 44. Q depends on V
alone: block sizes, splits and warps never change the draws.
With per-request seeds (an int64 [B] ``seed``), row r's counters are those of row 0 keyed by
its own seed (kernels/triton_seeds.py): its draws depend on its seed alone, not on its row.

Memory traffic: probs read once (4 B V bytes) plus one chunk per row and split re-read
(4 B S 4Q bytes), ids written (8 B bytes); with S > 1 splits, 12 B S bytes of partial
winners written and read back by the row's last program (a ticket per row block). One
launch per call. No noise tensor in memory. Per-request seeds: 8 B per row and program read
(an int seed: none).
"""

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.meta import per_request_seeds
from sampling_harness.kernels.split_scratch import (
    cdiv,
    multiprocessors,
    next_power_of_2,
    split_scratch,
)
from sampling_harness.kernels.triton_seeds import philox_key, seed_argument

REFINE_BELOW = tl.constexpr(4096)      # main words within 2^12 of either end get 32 more bits
REFINE_BIT = tl.constexpr(1 << 62)     # refinement words: token counters with bit 62 set
CHUNK_BIT = tl.constexpr(1 << 61)      # chunk variates: chunk counters with bit 61 set
# race_exact's keyword launch settings default to these (bound at import: patching them
# changes nothing). Swept on an H100 (docs/performance.md): with one program per SM-share,
# 256 rows are not split; 5 stages: 1-3 % faster than 4 at the three bench shapes, the
# coupled test exact (2026-11-23)
GPU_WARPS, GPU_PROGRAMS_PER_SM = 4, 1
GPU_STAGES, GPU_UNROLL = 5, 1
GPU_ROWS = 1                            # rows per program
MIN_QUARTER = 16                        # Q's floor (quarter_width)


@triton.jit
def fold(word):
    """(upper, x_int): which half of (0, 1) the uniform fell in, and its distance from that
    half's end in units of 2^-32 (an integer in [0, 2^31))."""
    upper = word >= 0x80000000
    return upper, tl.where(upper, word ^ 0xFFFFFFFF, word)


@triton.jit
def exponential(upper, x_int, tail):
    """q = -log(1 - v) in float32, x = (x_int + tail) 2^-32 the distance from the nearer end
    (tail = 1/2, or refinement bits where x_int < REFINE_BELOW).
    Upper half: q = -log(x). Lower half: q = -log1p(-x), by its series below 1/16
    (relative error < 2^-31, however small x is) and as -log(1 - x) above."""
    x = (x_int.to(tl.float32) + tail) * 2.3283064365386963e-10
    series = x * (1.0 + x * (0.5 + x * (1.0 / 3 + x * (0.25 + x * (0.2 + x * (1.0 / 6 + x / 7))))))
    logged = -tl.log(tl.where(upper, x, 1.0 - x))
    return tl.where(upper | (x >= 0.0625), logged, series)


@triton.jit
def tail_bits(word, x_int):
    """The part of x below 2^-32: 1/2 (a cell's midpoint), or 32 refinement bits near the ends."""
    return tl.where(x_int < REFINE_BELOW, (word.to(tl.float32) + 0.5) * 2.3283064365386963e-10, 0.5)


@triton.jit
def quarter(probs_ptr, rows, row_ok, stride, V, cols):
    """Load probs at ``cols`` ([1, Q] shared by the rows, or [BLOCK_R, Q]); 0 past the row."""
    mask = row_ok[:, None] & (cols < V)
    return tl.load(probs_ptr + rows.to(tl.int64)[:, None] * stride + cols, mask=mask, other=0.0)


@triton.jit
def score(p, upper, x_int, tail):
    """p / q, or -1 for a zero-probability token (never NaN: q is finite and > 0)."""
    return tl.where(p > 0, p / exponential(upper, x_int, tail), -1.0)


@triton.jit
def keep_best(best, best_id, s, col0):
    """Fold a [BLOCK_R, Q] tile of scores starting at column ``col0`` into the running best
    (the earliest column wins a tie)."""
    top, arg = tl.max(s, axis=1, return_indices=True, return_indices_tie_break_left=True)
    better = top > best
    return tl.where(better, top, best), tl.where(better, arg.to(tl.int64) + col0, best_id)


@triton.jit
def chunk_probs(probs_ptr, rows, row_ok, stride, V, col0, Q: tl.constexpr):
    """The four quarters [BLOCK_R, Q] of the chunks starting at ``col0`` ([1, 1] or
    [BLOCK_R, 1])."""
    j = tl.arange(0, Q)[None, :]
    return (quarter(probs_ptr, rows, row_ok, stride, V, col0 + j),
            quarter(probs_ptr, rows, row_ok, stride, V, col0 + Q + j),
            quarter(probs_ptr, rows, row_ok, stride, V, col0 + 2 * Q + j),
            quarter(probs_ptr, rows, row_ok, stride, V, col0 + 3 * Q + j))


@triton.jit
def chunk_noise(seed, rows, chunk, n_chunks):
    """One Exp(1) per (row, chunk), from two Philox words (64 bits) in their own counters."""
    key, row = philox_key(seed, rows)
    counter = row.to(tl.int64) * n_chunks + chunk + CHUNK_BIT
    word, refine, _, _ = tl.randint4x(key, counter)
    upper, x_int = fold(word)
    return exponential(upper, x_int, (refine.to(tl.float32) + 0.5) * 2.3283064365386963e-10)


@triton.jit
def race_chunk(seed, rows, winner, n_chunks, p0, p1, p2, p3, BLOCK: tl.constexpr,
               Q: tl.constexpr):
    """Level 2: the tokens of each row's winning chunk (weights p0..p3, its four quarters)
    race with their own variates: main words of counter row n_chunks Q + chunk Q + j,
    refined near the ends of (0, 1). Returns the winning column (the earliest on a tie)."""
    col0 = winner * 4 * Q
    j = tl.arange(0, Q)
    key, row = philox_key(seed, rows[:, None])
    counter = row.to(tl.int64) * (n_chunks * Q) + (winner * Q)[:, None] + j[None, :]
    w0, w1, w2, w3 = tl.randint4x(key, counter)
    u0, x0 = fold(w0)
    u1, x1 = fold(w1)
    u2, x2 = fold(w2)
    u3, x3 = fold(w3)
    t0 = tl.full(x0.shape, 0.5, tl.float32)
    t1 = t0
    t2 = t0
    t3 = t0
    near = tl.minimum(tl.minimum(x0, x1), tl.minimum(x2, x3))
    if tl.min(near) < REFINE_BELOW:  # rare: refinement bits are made for few chunks
        r0, r1, r2, r3 = tl.randint4x(key, counter | REFINE_BIT)
        t0 = tail_bits(r0, x0)
        t1 = tail_bits(r1, x1)
        t2 = tail_bits(r2, x2)
        t3 = tail_bits(r3, x3)
    top = tl.full([BLOCK], -2.0, tl.float32)
    token = tl.zeros([BLOCK], tl.int64)
    top, token = keep_best(top, token, score(p0, u0, x0, t0), col0)
    top, token = keep_best(top, token, score(p1, u1, x1, t1), col0 + Q)
    top, token = keep_best(top, token, score(p2, u2, x2, t2), col0 + 2 * Q)
    top, token = keep_best(top, token, score(p3, u3, x3, t3), col0 + 3 * Q)
    return token


@triton.jit
def merge_splits(best_ptr, part_ptr, ids_ptr, rows, row_ok, B, splits):
    """Each row's winner over its S splits: split 0's partial, replaced by each later split
    whose score is strictly higher (the earliest split wins ties); the winning split's
    token is the row's id."""
    top = tl.load(best_ptr + rows, mask=row_ok, other=0.0)
    token = tl.load(part_ptr + rows, mask=row_ok, other=0)
    for split in range(1, splits):
        score = tl.load(best_ptr + split * B + rows, mask=row_ok, other=0.0)
        better = score > top
        top = tl.where(better, score, top)
        token = tl.where(better, tl.load(part_ptr + split * B + rows, mask=row_ok, other=0),
                         token)
    tl.store(ids_ptr + rows, token, mask=row_ok)


@triton.jit
def publish_split(best_ptr, part_ptr, ids_ptr, tickets_ptr, rows, row_ok, best, token, B,
                  splits):
    """Store this program's (score, token) partial for its split, take its row block's
    ticket; the last of the S programs resets the ticket for the next call and merges the
    partials (``merge_splits``). One launch, capturable in a CUDA graph."""
    out = tl.program_id(1) * B + rows
    tl.store(part_ptr + out, token, mask=row_ok)
    tl.store(best_ptr + out, best, mask=row_ok)
    tl.debug_barrier()                                     # all threads' stores, then release
    ticket = tl.atomic_add(tickets_ptr + tl.program_id(0), 1)         # acq_rel, gpu scope
    if ticket == splits - 1:                               # the last of the row block's S
        tl.atomic_xchg(tickets_ptr + tl.program_id(0), 0)             # ready for the next call
        merge_splits(best_ptr, part_ptr, ids_ptr, rows, row_ok, B, splits)


# V stays specialised: with V % 16 == 0 known, the column masks (cols < V) are constant over
# 16-column runs and the probs load as vectors (H100, 256 x 151936, graph replay: 0.0692 ms,
# against 0.0743 ms unspecialised); it adds one variant at most (V % 16 or not)
@triton.jit(do_not_specialize=["seed", "B", "n_chunks", "chunks_per_split", "splits"])
def _race_kernel(probs_ptr, ids_ptr, best_ptr, part_ptr, tickets_ptr, seed, B, V, stride,
                 n_chunks, chunks_per_split, splits, BLOCK_R: tl.constexpr, Q: tl.constexpr,
                 SPLIT: tl.constexpr, STAGES: tl.constexpr, UNROLL: tl.constexpr):
    """Each program: BLOCK_R rows and a run of chunks. Level 1 picks each row's chunk with
    the highest P_G / q_G; level 2 races the tokens of that chunk. With S > 1 splits each
    program writes its (score, token) partial and takes a ticket; the row block's last
    program merges the S partials (one launch per call, capturable in a CUDA graph)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < B
    first = tl.program_id(1) * chunks_per_split
    last = tl.minimum(first + chunks_per_split, n_chunks)
    best = tl.full([BLOCK_R], -2.0, tl.float32)
    winner = tl.zeros([BLOCK_R], tl.int32) + first
    for chunk in tl.range(first, last, num_stages=STAGES, loop_unroll_factor=UNROLL):
        p0, p1, p2, p3 = chunk_probs(probs_ptr, rows, row_ok, stride, V,
                                     tl.full([1, 1], 0, tl.int32) + chunk * 4 * Q, Q)
        mass = tl.sum(p0 + p1 + p2 + p3, axis=1)
        level1 = tl.where(mass > 0, mass / chunk_noise(seed, rows, chunk, n_chunks), -1.0)
        better = level1 > best
        best = tl.where(better, level1, best)
        winner = tl.where(better, chunk, winner)

    col0 = (winner * 4 * Q)[:, None]
    p0, p1, p2, p3 = chunk_probs(probs_ptr, rows, row_ok, stride, V, col0, Q)
    token = race_chunk(seed, rows, winner, n_chunks, p0, p1, p2, p3, BLOCK_R, Q)
    if SPLIT:
        publish_split(best_ptr, part_ptr, ids_ptr, tickets_ptr, rows, row_ok, best, token, B,
                      splits)
    else:
        tl.store(ids_ptr + rows, token, mask=row_ok)


@triton.jit(do_not_specialize=["seed"])
def _bits_kernel(main_ptr, refine_ptr, chunk_ptr, seed, V, n_chunks, Q: tl.constexpr):
    """The race kernel's noise words for one (row, chunk): main and refinement word of every
    column, and the chunk's two words; for coupled tests against the float64 reference."""
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    j = tl.arange(0, Q)
    counter = (row.to(tl.int64) * (n_chunks * Q) + chunk * Q + j)[None, :]
    words = tl.randint4x(seed, counter)
    extra = tl.randint4x(seed, counter | REFINE_BIT)
    base = row.to(tl.int64) * V + chunk * 4 * Q
    for k in tl.static_range(4):
        cols = chunk * 4 * Q + k * Q + j
        at = base + k * Q + j
        tl.store(main_ptr + at[None, :], words[k].to(tl.int64), mask=cols[None, :] < V)
        tl.store(refine_ptr + at[None, :], extra[k].to(tl.int64), mask=cols[None, :] < V)
    pair = tl.arange(0, 2)
    word, refine, _, _ = tl.randint4x(seed, row.to(tl.int64) * n_chunks + chunk + CHUNK_BIT
                                      + pair * 0)
    tl.store(chunk_ptr + (row.to(tl.int64) * n_chunks + chunk) * 2 + pair,
             tl.where(pair == 0, word.to(tl.int64), refine.to(tl.int64)))


def quarter_width(vocab: int) -> int:
    """Q: a function of V alone (it fixes the noise layout), 512 for LLM vocabularies, at
    least MIN_QUARTER: Q is a compiled constant, and the floor lets every V <= 4 MIN_QUARTER
    share one kernel (a run's small vocabularies 2, 5, 13, 40 cost one compile, not four;
    the masked columns of a tiny row cost the GPU nothing that matters)."""
    return min(512, max(MIN_QUARTER, next_power_of_2(-(-vocab // 4))))


def _launch_shape(batch: int, vocab: int, device: torch.device, rows: int,
                  programs_per_sm: int, warps: int):
    """(BLOCK_R, splits, num_warps). Interpreter: 2^17-token tiles (it pays per program and
    per loop trip), a row of several chunks split in two (so that a CPU run takes the
    split path too: the draws are the same). GPU: ``rows`` rows per program, rows split
    into runs of chunks until there are ``programs_per_sm`` programs per SM."""
    q = quarter_width(vocab)
    if device.type != "cuda":
        return min(next_power_of_2(batch), max(1, 2**17 // (4 * q))), \
            min(2, cdiv(vocab, 4 * q)), 4
    chunks = cdiv(vocab, 4 * q)
    rows = min(rows, next_power_of_2(batch))
    wanted = cdiv(programs_per_sm * multiprocessors(device), cdiv(batch, rows))
    return rows, min(chunks, max(1, wanted)), warps


def float32_rows(probs: torch.Tensor) -> torch.Tensor:
    """``probs`` contiguous, or a one-line error unless it is float32 [B, V]."""
    if probs.dtype != torch.float32 or probs.dim() != 2:
        raise ValueError(f"probs must be float32 [B, V], got {probs.dtype} {tuple(probs.shape)}")
    return probs.contiguous()


@per_request_seeds
def race_exact(probs: torch.Tensor, seed, *, warps: int = GPU_WARPS,
               programs_per_sm: int = GPU_PROGRAMS_PER_SM, stages: int = GPU_STAGES,
               unroll: int = GPU_UNROLL, rows: int = GPU_ROWS) -> torch.Tensor:
    """Family ``sample``: one token id per row of ``probs`` (float32 [B, V]), as int64.
    ``seed``: an int, or int64 [B] per-request seeds (kernels/triton_seeds.py). One kernel
    launch, no host synchronisation: capturable in a CUDA graph.
    Launch settings (keywords, ``bench --launch``): on a GPU ``rows`` per program, ``warps``
    and ``programs_per_sm`` (the split; the interpreter takes its own tiles); on both the
    level-1 loop's ``stages`` and ``unroll``. None changes the draws'
    words; warps and rows order the float32 chunk sums."""
    probs = float32_rows(probs)
    batch, vocab = probs.shape
    seed = seed_argument(seed, batch, probs.device)
    q = quarter_width(vocab)
    chunks = cdiv(vocab, 4 * q)
    block_r, splits, warps = _launch_shape(batch, vocab, probs.device, rows, programs_per_sm,
                                           warps)
    per_split = cdiv(chunks, splits)
    splits = cdiv(chunks, per_split)
    row_blocks = cdiv(batch, block_r)
    ids = torch.empty(batch, dtype=torch.int64, device=probs.device)
    tickets, best, part = split_scratch(
        "triton-exact", probs.device, row_blocks, splits * batch, (torch.float32, torch.int64)
    ) if splits > 1 else (ids, ids, ids)
    _race_kernel[(row_blocks, splits)](
        probs, ids, best, part, tickets, seed, batch, vocab, probs.stride(0), chunks,
        per_split, splits, BLOCK_R=block_r, Q=q, SPLIT=splits > 1, STAGES=stages,
        UNROLL=unroll, num_warps=warps)
    return ids


def race_bits(batch: int, vocab: int, seed: int, device):
    """The noise words ``race_exact`` draws, as int64: per token (main, refinement), shape
    [B, V], and per chunk (word, refinement), shape [B, chunks, 2]. With ``chunk_width`` the
    float64 reference rebuilds the two-level race from them."""
    q = quarter_width(vocab)
    chunks = cdiv(vocab, 4 * q)
    main = torch.empty((batch, vocab), dtype=torch.int64, device=device)
    refine = torch.empty_like(main)
    chunk = torch.empty((batch, chunks, 2), dtype=torch.int64, device=device)
    _bits_kernel[(batch, chunks)](main, refine, chunk, seed, vocab, chunks, Q=q)
    return main, refine, chunk


def chunk_width(vocab: int) -> int:
    """Columns per chunk of the two-level race (4 Q)."""
    return 4 * quarter_width(vocab)
