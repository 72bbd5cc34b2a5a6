"""triton-inverse-cdf: exact inverse-CDF sampling, one 64-bit uniform per row.

token = the first i with C_i > u T, where C_i = p_0 + ... + p_i, T = C_{V-1} and u ~ U[0, 1)
(53 bits of one 64-bit Philox draw per row, counter ``row``). P(token = i) = p_i / T, up to
float64 rounding of the sums (relative 2^-53). Since C is non-decreasing, the first i with
C_i > u T has p_i > 0: a zero-probability token is never chosen, in float64 as in exact
arithmetic (C_i = C_{i-1} exactly when p_i = 0).

In two levels: (1) the float64 sum S_c of every chunk of W columns (W a function of V alone),
written to a scratch [B, chunks]; (2) the row's last program takes the prefix sums of S,
finds the chunk c whose cumulative sum crosses u T, re-reads it and finds the first token
whose in-chunk prefix sum exceeds u T - (S_0 + ... + S_{c-1}). If rounding leaves no such
token (the in-chunk sums are ordered differently from S_c), or u T rounds up to T, the last
positive token of the chunk (or of the row) is chosen: never a zero-probability token, never
an id past V.

Memory traffic: probs read once (4 B V bytes) plus one chunk per row re-read (4 B W), chunk
sums written and read back (16 B V / W), ids written (8 B bytes). No noise beyond one Philox
counter per row (per-request seeds: counter 0 keyed by the row's seed, 8 B B read). A row
may be split over S programs (runs of chunks) for occupancy; the last of them, by a ticket
per row block (kernels/split_scratch.py), finishes the row: one launch, capturable in a CUDA
graph (call it once before capture so the scratch exists).
"""

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.meta import per_request_seeds
from sampling_harness.kernels.sample.triton_race import float32_rows
from sampling_harness.kernels.split_scratch import (
    cdiv,
    multiprocessors,
    next_power_of_2,
    split_scratch,
)
from sampling_harness.kernels.triton_seeds import philox_key, seed_argument

# inverse_cdf's keyword launch settings default to these (bound at import: patching them
# changes nothing), swept on a GPU:
GPU_WARPS, GPU_PROGRAMS_PER_SM, GPU_STAGES = 4, 1, 3
GPU_CHUNK = 0    # chunk width override for sweeps (0: chunk_width(V))
# None of these changes the law. Warps, rows per program and W order the float64 sums
# differently, which may move a draw only where u T lies within rounding (~2^-53 T) of a
# prefix sum: splits and stages never change the sums.


@triton.jit
def row_uniform(seed, rows):
    """u in [0, 1) with 53 random bits: (a 2^21 + (b >> 11)) 2^-53 for Philox words (a, b)
    of counter ``row`` (per-request seeds: the row's seed, counter 0); exactly
    representable, so u < 1."""
    key, row = philox_key(seed, rows)
    a, b, _, _ = tl.randint4x(key, row.to(tl.int64))
    hi = a.to(tl.float64) * 2097152.0                  # 2^21
    lo = (b >> 11).to(tl.float64)
    return (hi + lo) * 1.1102230246251565e-16          # 2^-53


@triton.jit
def load_chunk(probs_ptr, rows, row_ok, stride, V, col0, W: tl.constexpr):
    """[BLOCK_R, W] probs from column ``col0`` ([1, 1] or [BLOCK_R, 1]); 0 past the row."""
    cols = col0 + tl.arange(0, W)[None, :]
    mask = row_ok[:, None] & (cols < V)
    return tl.load(probs_ptr + rows.to(tl.int64)[:, None] * stride + cols, mask=mask,
                   other=0.0)


@triton.jit
def finish_rows(probs_ptr, sums_ptr, ids_ptr, seed, rows, row_ok, V, stride, n_chunks,
                W: tl.constexpr, NC: tl.constexpr):
    """Level 2 for BLOCK_R rows: the crossing chunk c = #{k : C_k <= u T} (C the prefix
    sums of S), capped at the last chunk of positive mass; then the first positive token of
    c whose in-chunk prefix sum exceeds u T - C_{c-1}, else the chunk's last positive token."""
    k = tl.arange(0, NC)[None, :]
    sums = tl.load(sums_ptr + rows.to(tl.int64)[:, None] * n_chunks + k,
                   mask=row_ok[:, None] & (k < n_chunks), other=0.0)
    cum = tl.cumsum(sums, axis=1)
    total = tl.max(cum, axis=1)
    target = row_uniform(seed, rows) * total
    crossed = tl.sum(((cum <= target[:, None]) & (k < n_chunks)).to(tl.int32), axis=1)
    last_pos = tl.max(tl.where(sums > 0, k, 0), axis=1)
    c = tl.minimum(crossed, last_pos)
    before = tl.max(tl.where(k < c[:, None], cum, 0.0), axis=1)
    rest = target - before
    col0 = (c * W)[:, None]
    p = load_chunk(probs_ptr, rows, row_ok, stride, V, col0, W)
    inner = tl.cumsum(p.to(tl.float64), axis=1)
    j = tl.arange(0, W)[None, :]
    first = tl.min(tl.where((inner > rest[:, None]) & (p > 0), j, W), axis=1)
    last = tl.max(tl.where(p > 0, j, 0), axis=1)
    token = tl.where(first < W, first, last) + c * W
    tl.store(ids_ptr + rows, token.to(tl.int64), mask=row_ok)


@triton.jit(do_not_specialize=["seed"])
def _inverse_cdf_kernel(probs_ptr, ids_ptr, sums_ptr, tickets_ptr, seed, B, V, stride,
                        n_chunks, chunks_per_split, splits, BLOCK_R: tl.constexpr,
                        W: tl.constexpr, NC: tl.constexpr, SPLIT: tl.constexpr,
                        STAGES: tl.constexpr):
    """Each program: BLOCK_R rows and a run of chunks, whose float64 sums it writes. The
    row block's last program (a ticket, with S > 1 splits) finishes its rows."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < B
    first = tl.program_id(1) * chunks_per_split
    last = tl.minimum(first + chunks_per_split, n_chunks)
    for chunk in tl.range(first, last, num_stages=STAGES):
        p = load_chunk(probs_ptr, rows, row_ok, stride, V,
                       tl.full([1, 1], 0, tl.int32) + chunk * W, W)
        mass = tl.sum(p.to(tl.float64), axis=1)
        tl.store(sums_ptr + rows.to(tl.int64) * n_chunks + chunk, mass, mask=row_ok)
    tl.debug_barrier()                                     # all threads' sums, then release
    if SPLIT:
        ticket = tl.atomic_add(tickets_ptr + tl.program_id(0), 1)     # acq_rel, gpu scope
        if ticket == splits - 1:                           # the last of the row block's S
            tl.atomic_xchg(tickets_ptr + tl.program_id(0), 0)         # ready for the next call
            finish_rows(probs_ptr, sums_ptr, ids_ptr, seed, rows, row_ok, V, stride,
                        n_chunks, W, NC)
    else:
        finish_rows(probs_ptr, sums_ptr, ids_ptr, seed, rows, row_ok, V, stride, n_chunks,
                    W, NC)


@triton.jit(do_not_specialize=["seed"])
def _uniform_kernel(out_ptr, seed, B, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + rows, row_uniform(seed, rows), mask=rows < B)


def scan_width(chunks: int) -> int:
    """NC, the width of the chunk sums' prefix scan: the next power of two, at least 16 (the
    padding is masked, its sums 0). Triton 3.6 fails to compile a float64 scan of 1 or 2
    elements beside vectorised loads (V a multiple of 16, W >= 512: "PassManager::run
    failed", an assertion in ScanOpToLLVM, on an H100); 16 and more compiled and ran."""
    return max(16, next_power_of_2(chunks))


def chunk_width(vocab: int, chunk: int = 0) -> int:
    """W: ``chunk`` (a power of two) if given, else a function of V alone, 2048 for LLM
    vocabularies."""
    return chunk or min(2048, next_power_of_2(max(1, vocab)))


def _launch_shape(batch: int, vocab: int, device: torch.device, w: int,
                  programs_per_sm: int, warps: int):
    """(BLOCK_R, splits, num_warps) for chunks of ``w`` columns. Interpreter: 2^17-element
    tiles (it pays per program and per loop trip), a row of several chunks split in two (so
    that a CPU run takes the split path too: the draws are the same). GPU: one row per
    program, rows split into runs of chunks until there are ``programs_per_sm`` programs
    per SM."""
    if device.type != "cuda":
        return min(next_power_of_2(batch), max(1, 2**17 // w)), min(2, cdiv(vocab, w)), 4
    wanted = cdiv(programs_per_sm * multiprocessors(device), batch)
    return 1, min(cdiv(vocab, w), max(1, wanted)), warps


@per_request_seeds
def inverse_cdf(probs: torch.Tensor, seed, *, chunk: int = GPU_CHUNK, warps: int = GPU_WARPS,
                programs_per_sm: int = GPU_PROGRAMS_PER_SM,
                stages: int = GPU_STAGES) -> torch.Tensor:
    """Family ``sample``: one token id per row of ``probs`` (float32 [B, V]), as int64;
    ``seed`` an int or int64 [B] per-request seeds. One kernel launch, no host
    synchronisation: capturable in a CUDA graph.
    Launch settings (keywords, ``bench --launch``): on a GPU ``warps`` and
    ``programs_per_sm`` (the split; the interpreter takes its own tiles); on both the
    ``chunk`` width W (0: V's own) and the sum loop's ``stages``."""
    probs = float32_rows(probs)
    batch, vocab = probs.shape
    seed = seed_argument(seed, batch, probs.device)
    w = chunk_width(vocab, chunk)
    chunks = cdiv(vocab, w)
    block_r, splits, warps = _launch_shape(batch, vocab, probs.device, w, programs_per_sm,
                                           warps)
    per_split = cdiv(chunks, splits)
    splits = cdiv(chunks, per_split)
    row_blocks = cdiv(batch, block_r)
    ids = torch.empty(batch, dtype=torch.int64, device=probs.device)
    if splits > 1:   # held tickets; unsplit, a fresh buffer (no memset node in a graph)
        tickets, sums = split_scratch("triton-inverse-cdf", probs.device, row_blocks,
                                      batch * chunks, (torch.float64,))
    else:
        sums = torch.empty(batch * chunks, dtype=torch.float64, device=probs.device)
        tickets = sums
    _inverse_cdf_kernel[(row_blocks, splits)](
        probs, ids, sums, tickets, seed, batch, vocab, probs.stride(0), chunks, per_split,
        splits, BLOCK_R=block_r, W=w, NC=scan_width(chunks), SPLIT=splits > 1,
        STAGES=stages, num_warps=warps)
    return ids


def row_uniforms(batch: int, seed: int, device) -> torch.Tensor:
    """The uniforms u (float64 [B]) that ``inverse_cdf`` draws for rows 0..B-1 with ``seed``."""
    out = torch.empty(batch, dtype=torch.float64, device=device)
    _uniform_kernel[(cdiv(batch, 128),)](out, seed, batch, BLOCK=128)
    return out
