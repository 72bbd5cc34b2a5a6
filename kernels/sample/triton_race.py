"""triton-exact: the exponential race fused into one pass over probs, with 64-bit noise.

token = argmax_i p_i / q_i, q_i ~ Exp(1), q_i = -log(1 - v_i) for a uniform v_i. One Philox
counter gives four 32-bit words, the main words of four tokens: chunk c of a row spans
4Q columns, and word k of counter (row, c, j) belongs to column 4Qc + Qk + j, where the
quarter width Q depends on V alone. A token's noise is a pure function of (seed, row, col, V):
block sizes, splits and warps never change the draws.

Resolution: with x the distance of v from the nearer end of (0, 1), a main word resolves
x to 2^-32; where x < 2^-20 a second Philox word (counter with bit 62 set) refines it to
2^-64, so q resolves down to 2^-65 where float32 ``exponential_`` stops at 2^-24 and
float64's at 2^-53, and up to 44 in the upper tail.

Pruning: q >= x (>= 1/2 in the upper half), so token i cannot beat the row's running
best b when p_i <= b x_i. A step where that holds for every token skips the log and the
division: after the first steps of a row almost all do, and the cost is Philox plus a
multiply-compare per token.

Memory traffic: probs read once (4 B V bytes), ids written once (8 B bytes); when a few rows
are split across programs, 12 B S bytes of partial winners too. No noise tensor in memory.
"""

import functools
import os

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
REFINE_BELOW = 4096         # main words within 2^12 of either end get 32 more bits
REFINE_COUNTER = 1 << 62    # refinement words come from counters with bit 62 set
LAUNCH_EXTRA: dict = {}     # extra launch options, set by tuning scripts
GPU_SUB, GPU_WARPS, GPU_PROGRAMS_PER_SM = 128, 1, 16   # measured: docs/performance.md


@triton.jit
def fold(word):
    """(upper, x_int): which half of (0, 1) the uniform fell in, and its distance from that
    half's end in units of 2^-32 (an integer in [0, 2^31))."""
    upper = word >= 0x80000000
    return upper, tl.where(upper, word ^ 0xFFFFFFFF, word)


@triton.jit
def lower_bound(upper, x_int):
    """A float32 number <= q. Lower half: x_int 2^-32 <= x <= q, built from integer ops
    only (the top 23 bits of x_int as a mantissa, f = 1 + (x_int >> 8) 2^-23, then
    (f - 1) / 2, exact; 0 for tiny x). Upper half: q = -log(x) >= log 2 > 1/2."""
    f = ((x_int >> 8) | 0x3F800000).to(tl.float32, bitcast=True)
    return tl.where(upper, 0.5, (f - 1.0) * 0.5)


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
    return tl.where(x_int < 4096, (word.to(tl.float32) + 0.5) * 2.3283064365386963e-10, 0.5)


@triton.jit
def quarter(probs_ptr, rows, row_ok, stride, V, cols):
    """Load one quarter of a chunk: probs [BLOCK_R, Q] (0 beyond the row)."""
    mask = row_ok[:, None] & (cols[None, :] < V)
    return tl.load(probs_ptr + rows.to(tl.int64)[:, None] * stride + cols[None, :], mask=mask,
                   other=0.0)


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
def step_probs(probs_ptr, rows, row_ok, stride, V, col0, Q: tl.constexpr, SUB: tl.constexpr):
    """The four quarter slices of one step, starting at ``col0``: probs [BLOCK_R, SUB] each."""
    j = tl.arange(0, SUB)
    return (quarter(probs_ptr, rows, row_ok, stride, V, col0 + j),
            quarter(probs_ptr, rows, row_ok, stride, V, col0 + Q + j),
            quarter(probs_ptr, rows, row_ok, stride, V, col0 + 2 * Q + j),
            quarter(probs_ptr, rows, row_ok, stride, V, col0 + 3 * Q + j))


@triton.jit(do_not_specialize=["seed"])
def _race_kernel(probs_ptr, best_ptr, ids_ptr, seed, B, V, stride, n_chunks, steps_per_split,
                 BLOCK_R: tl.constexpr, Q: tl.constexpr, SUB: tl.constexpr, SPLIT: tl.constexpr,
                 PREFETCH: tl.constexpr = True, ROUNDS: tl.constexpr = 10):
    """Each program: BLOCK_R rows, a run of steps, a running (best, id). A step is SUB
    counters of a chunk and the 4 SUB tokens they feed (SUB = Q: the whole chunk). With
    PREFETCH the next step's probs are loaded before this step's noise is made."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < B
    subs = Q // SUB
    first = tl.program_id(1) * steps_per_split
    last = tl.minimum(first + steps_per_split, n_chunks * subs)
    best = tl.full([BLOCK_R], -2.0, tl.float32)
    best_id = tl.zeros([BLOCK_R], tl.int64)
    n0, n1, n2, n3 = step_probs(probs_ptr, rows, row_ok, stride, V,
                                (first // subs) * 4 * Q + (first % subs) * SUB, Q, SUB)
    for step in range(first, last):
        chunk = step // subs
        j = (step % subs) * SUB + tl.arange(0, SUB)      # counters of this step in the chunk
        col0 = chunk * 4 * Q + (step % subs) * SUB       # column of quarter 0's first token
        if PREFETCH:
            p0, p1, p2, p3 = n0, n1, n2, n3
            following = step + 1  # past the split's last step: valid memory, or masked
            n0, n1, n2, n3 = step_probs(probs_ptr, rows, row_ok, stride, V,
                                        (following // subs) * 4 * Q + (following % subs) * SUB,
                                        Q, SUB)
        else:
            p0, p1, p2, p3 = step_probs(probs_ptr, rows, row_ok, stride, V, col0, Q, SUB)
        counter = rows.to(tl.int64)[:, None] * (n_chunks * Q) + (chunk * Q + j)[None, :]
        w0, w1, w2, w3 = tl.randint4x(seed, counter, ROUNDS)
        u0, x0 = fold(w0)
        u1, x1 = fold(w1)
        u2, x2 = fold(w2)
        u3, x3 = fold(w3)
        bar = best[:, None]
        hopeful = (p0 > bar * lower_bound(u0, x0)) | (p1 > bar * lower_bound(u1, x1)) \
            | (p2 > bar * lower_bound(u2, x2)) | (p3 > bar * lower_bound(u3, x3))
        if tl.max(hopeful.to(tl.int32)) > 0:  # some token of the step may beat the best
            near = tl.minimum(tl.minimum(x0, x1), tl.minimum(x2, x3))
            t0 = tl.full(x0.shape, 0.5, tl.float32)
            t1 = t0
            t2 = t0
            t3 = t0
            if tl.min(near) < 4096:  # REFINE_BELOW: rare, so refinement bits are made rarely
                r0, r1, r2, r3 = tl.randint4x(seed, counter | 4611686018427387904, ROUNDS)
                t0 = tail_bits(r0, x0)
                t1 = tail_bits(r1, x1)
                t2 = tail_bits(r2, x2)
                t3 = tail_bits(r3, x3)
            best, best_id = keep_best(best, best_id, score(p0, u0, x0, t0), col0)
            best, best_id = keep_best(best, best_id, score(p1, u1, x1, t1), col0 + Q)
            best, best_id = keep_best(best, best_id, score(p2, u2, x2, t2), col0 + 2 * Q)
            best, best_id = keep_best(best, best_id, score(p3, u3, x3, t3), col0 + 3 * Q)
    out = tl.program_id(1) * B + rows
    tl.store(ids_ptr + out, best_id, mask=row_ok)
    if SPLIT:
        tl.store(best_ptr + out, best, mask=row_ok)


@triton.jit(do_not_specialize=["seed"])
def _bits_kernel(main_ptr, refine_ptr, seed, V, n_chunks, Q: tl.constexpr):
    """The race kernel's noise words for one (row, chunk): main and refinement word of every
    column, for coupled tests against the float64 reference."""
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    j = tl.arange(0, Q)
    counter = (row.to(tl.int64) * (n_chunks * Q) + chunk * Q + j)[None, :]
    words = tl.randint4x(seed, counter)
    extra = tl.randint4x(seed, counter | 4611686018427387904)
    base = row.to(tl.int64) * V + chunk * 4 * Q
    for k in tl.static_range(4):
        cols = chunk * 4 * Q + k * Q + j
        at = base + k * Q + j
        tl.store(main_ptr + at[None, :], words[k].to(tl.int64), mask=cols[None, :] < V)
        tl.store(refine_ptr + at[None, :], extra[k].to(tl.int64), mask=cols[None, :] < V)


def quarter_width(vocab: int) -> int:
    """Q: a function of V alone (it fixes the noise layout), 512 for LLM vocabularies."""
    return min(512, triton.next_power_of_2(max(1, -(-vocab // 4))))


@functools.cache
def _multiprocessors(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


def _launch_shape(batch: int, vocab: int, device: torch.device):
    """(BLOCK_R, SUB, splits, num_warps). Interpreter: 2^17-token tiles, whole chunks (it pays
    per program and per loop trip). GPU: one warp per program walking a row in steps of
    SUB counters, so the per-step "may any token win" test is a warp vote, not a barrier;
    rows split into enough programs to fill the GPU."""
    q = quarter_width(vocab)
    if INTERPRET or device.type != "cuda":
        return min(triton.next_power_of_2(batch), max(1, 2**17 // (4 * q))), q, 1, 4
    sub = min(q, GPU_SUB)
    steps = triton.cdiv(vocab, 4 * q) * (q // sub)
    sms = _multiprocessors(device)
    return 1, sub, min(steps, max(1, triton.cdiv(GPU_PROGRAMS_PER_SM * sms, batch))), GPU_WARPS


def race_exact(probs: torch.Tensor, seed: int) -> torch.Tensor:
    """Family ``sample``: one token id per row of ``probs`` (float32 [B, V]), as int64."""
    if probs.dtype != torch.float32 or probs.dim() != 2:
        raise ValueError(f"probs must be float32 [B, V], got {probs.dtype} {tuple(probs.shape)}")
    batch, vocab = probs.shape
    probs = probs.contiguous()
    q = quarter_width(vocab)
    chunks = triton.cdiv(vocab, 4 * q)
    block_r, sub, splits, warps = _launch_shape(batch, vocab, probs.device)
    steps = chunks * (q // sub)
    per_split = triton.cdiv(steps, splits)
    splits = triton.cdiv(steps, per_split)
    ids = torch.empty((splits, batch), dtype=torch.int64, device=probs.device)
    best = torch.empty((splits, batch), dtype=torch.float32, device=probs.device) \
        if splits > 1 else ids
    _race_kernel[(triton.cdiv(batch, block_r), splits)](
        probs, best, ids, seed, batch, vocab, probs.stride(0), chunks, per_split,
        BLOCK_R=block_r, Q=q, SUB=sub, SPLIT=splits > 1, num_warps=warps, **LAUNCH_EXTRA)
    if splits == 1:
        return ids[0]
    return ids.gather(0, best.argmax(dim=0, keepdim=True))[0]


def race_bits(batch: int, vocab: int, seed: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The main and refinement words (as int64, shape [B, V]) of the noise ``race_exact``
    draws for each token: the float64 reference rebuilds q from them."""
    q = quarter_width(vocab)
    chunks = triton.cdiv(vocab, 4 * q)
    main = torch.empty((batch, vocab), dtype=torch.int64, device=device)
    refine = torch.empty_like(main)
    _bits_kernel[(batch, chunks)](main, refine, seed, vocab, chunks, Q=q)
    return main, refine
