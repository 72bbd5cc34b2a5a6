"""triton-logprobs: the values and ranks of requested token ids in one pass over the logits.

Per row, with a threshold c and a temperature t (raw modes: c = -inf, t = 1): key_j = x_j
where x_j >= c, else -inf; z_j = key_j / t. Values: z_id (logits modes) or z_id - (m + log s),
m = max z, s = sum e^(z - m) (logprobs modes); -inf at padding. Rank: #{j : key_j >= key_id},
ties counted (x -> x - lse and x -> x / t are increasing: the count on the mode's values).
Processed modes: top-k and top-p each keep a set {x >= c}, so together one threshold c per
row, computed in torch from torch-logprobs' kept set and applied on the fly.

One launch, grid (row blocks, S): program (r, p) folds columns [p C, (p + 1) C) of its rows
(C a multiple of BLOCK) into per-lane state, a max and sum-exp (one exponential per element,
e^-|z - m|: it rescales s when z is the new max, else is z's term; m starts at the lowest
finite float, so no -inf - -inf, and -inf adds 0) and per id a float32 count of key >=
key_id; writes (m, s) and the counts to a workspace; takes a ticket; the row block's last
program merges the S partials and writes values and ranks (ticket reset to 0 for the next).

Memory traffic: the logits read once (4 or 2 B V per row); per split the ids and their
logits gathered (12 or 10 B K, L2 hits after the first) and 4 K + 8 bytes of partials
written and read once; values and ranks written (12 B K). Processed modes add the torch
threshold (a sort and a float64 cumulative sum of [B, V]).

GPU: one row per program, rows split into S chunks for GPU_PROGRAMS_PER_SM programs per SM
(one program per row left 100 of 132 SMs idle at B = 32). H100 budget at the floor (~3 TB/s,
~1.75 GHz): an SM gets ~3.2 float32 elements and issues 128 lane-instructions per clock, 64
on the ALU pipe: ~40 instructions per element, ~20 ALU. Ranks cost a compare and an add per
(element, id): the K ids, not the bytes, bound this kernel. So K goes in exact power-of-two
groups (21 = 16 + 4 + 1, not 32 compares); counts are float32 (compare-select is one ALU
FSET.BF and the add runs on the FMA pipe; int32 counts, or int32 order-preserving keys, keep
both on the ALU); a thread's 4 adjacent compares add up in registers first (no shuffles, 4x
fewer accumulators); exp2 (ex2.approx.ftz, no denormal fix-ups); masks only in a row's last
block; the next block is loaded before this one is folded. sm_90 SASS of the loop (triton 3.6
and 3.9, fp32, K = 21, BLOCK 1024, 8 warps): 53 instructions per element, 80 registers.

PRUNE (kernels/logprobs/triton_logprobs_pruned.py, the default since 2026-11-23 with one warp
a program; with 8 warps it measured slower, as told below): an
element adds to an id's
rank only if it is >= the id's key, so with the keys ordered once per program, a block whose
max is below a group's smallest key skips that group's compares. Ids that are the row's
largest (an engine's top-20 and sampled token) skip all but the smallest key in almost every
block; random ids skip nothing and take an unpruned loop (decided on the first block). sm_90
SASS (triton 3.9 cross-compiled, raw_logprobs, fp32, K = 21, BLOCK 1024, 8 warps, 80
registers; the unpruned kernel there: 53.75 per element, 97 registers), per element: the
unpruned loop 53.0; the pruned loop 18.75 with every group skipped, 21.25 with the smallest
key's group (1 id), 29.75 with 5 ids, 61.75 with all 21 (the block max is a block
reduction: two barriers). Measured on an H100 (`bench logprobs`, 2026-11-23), it lost:
256x151936x21 0.121 ms with top ids and 0.136 ms with random ids, against 0.109 ms for the
unpruned kernel; 32x128256x21 0.159 ms eager against 0.073 (the per-row key sort and its
launch). Fewer instructions did not buy time: the loop is bound by the loads in flight
per SM (one 16-byte prefetch per thread), not only by issue. With ONE warp a program the
block max is a warp reduction (no barrier) and the branch is per warp: on the H100
(scripts/sweep_logprobs.py --pruned, BLOCK 512, 6 programs per SM) 0.081 ms with top ids
(64 % of the floor) and 0.111 ms with random ids, against 0.109 ms for the unpruned kernel
at its best (8 warps); so that is the default (GPU_BLOCK, GPU_WARPS, GPU_PROGRAMS_PER_SM).
The loads in flight were the limit: with the pruned loops pipelined by Triton over 4 blocks
(GPU_STAGES) instead of one block loaded ahead by hand, 0.073 ms with top ids (72 % of the
floor; a kernel that only reads reaches 80 %: scripts/read_ceiling.py) and 0.088 ms with
random ids.
"""

import contextlib
import os

import numpy as np
import torch
import triton
import triton.language as tl

from kernels.logprobs.torch_logprobs import kept_entries
from kernels.split_scratch import multiprocessors, split_scratch

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
GPU_BLOCK, GPU_WARPS, GPU_PROGRAMS_PER_SM = 512, 1, 6   # BLOCK >= 128 warps; swept by
# scripts/sweep_logprobs.py (pruned, one warp a program: see the module doc)
GPU_STAGES = 4   # the pruned loops pipelined by Triton over 4 blocks (the one-block hand
# prefetch they replaced: 0.081 ms at 256x151936x21 with top ids on an H100; 4 stages: 0.073)
PRUNE = True    # rank compares only in blocks that reach the ids' keys (triton_logprobs_pruned;
# False: the unpruned kernel, whose best launch on an H100 is BLOCK 1024, 8 warps, 4 per SM)
PRUNE_LIMIT = None   # a program prunes if its first block holds at most this many entries at or
# above the smallest key of the largest keys' group (None: that group's size, per row)
SPLITS = None                           # forces S, the splits of a row, when set
CPU_BLOCK, CPU_TILE = 4096, 2**20       # CPU: columns per block; a program's rows K BLOCK
LOWEST = tl.constexpr(-3.4028234663852886e38)   # the lowest finite float32
LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def slots_of(row, FIRST: tl.constexpr, G: tl.constexpr):
    """Slots FIRST .. FIRST + G - 1 of the rows: (offsets [R, G], slot < K, id live)."""
    logits_ptr, ids_ptr, rows, row_ok, cutoff, V, K, stride = row
    slot = FIRST + tl.arange(0, G)
    ok = row_ok[:, None] & (slot[None, :] < K)
    at = rows.to(tl.int64)[:, None] * K + slot[None, :]
    ids = tl.load(ids_ptr + at, mask=ok, other=-1)
    return at, ok, ok & (ids >= 0) & (ids < V), ids


@triton.jit
def requested_keys(row, FIRST: tl.constexpr, G: tl.constexpr, PROCESSED: tl.constexpr):
    """[R, G, 1]: the keys of slots FIRST .. FIRST + G - 1 (-inf at padding)."""
    logits_ptr, ids_ptr, rows, row_ok, cutoff, V, K, stride = row
    _, _, live, ids = slots_of(row, FIRST, G)
    key = tl.load(logits_ptr + rows.to(tl.int64)[:, None] * stride + ids, mask=live,
                  other=float("-inf")).to(tl.float32)
    if PROCESSED:
        key = tl.where(key >= cutoff[:, None], key, float("-inf"))
    return key[:, :, None]


@triton.jit
def count_at_least(count, key, key_id):
    """count [R, G, BLOCK / 4] += (key [R, 1, BLOCK] >= key_id [R, G, 1]) as 1.0 / 0.0, the
    4 adjacent elements of a thread summed first."""
    hit = tl.where(key >= key_id, 1.0, 0.0)
    return count + tl.sum(tl.reshape(hit, [hit.shape[0], hit.shape[1], count.shape[2], 4]), 3)


@triton.jit
def fold(x, ok, m, s, counts, keys, cutoff, t, GROUPS: tl.constexpr, LOGPROBS: tl.constexpr,
         PROCESSED: tl.constexpr, MASKED: tl.constexpr):
    """Fold a block x [R, 1, BLOCK] (-inf where not ok) into the per-lane max m and sum-exp
    s and the counts of the (up to 3) id groups."""
    key = x.to(tl.float32)
    if PROCESSED:
        key = tl.where(key >= cutoff[:, None, None], key, float("-inf"))
    if LOGPROBS:
        z = key
        if PROCESSED:
            z = key / t[:, None, None]
        e = tl.exp2(tl.abs(z - m) * -LOG2E)          # 0 where z = -inf (m is finite)
        s = tl.where(z > m, s * e + 1.0, s + e)
        m = tl.maximum(m, z)
    if MASKED:
        key = tl.where(ok, key, float("nan"))        # never >= a key: not counted
    c1, c2, c3 = counts
    c1 = count_at_least(c1, key, keys[0])
    if GROUPS > 1:
        c2 = count_at_least(c2, key, keys[1])
    if GROUPS > 2:
        c3 = count_at_least(c3, key, keys[2])
    return m, s, (c1, c2, c3)


@triton.jit
def store_counts(row, counts_ptr, count, split, B, FIRST: tl.constexpr):
    at, ok, _, _ = slots_of(row, FIRST, count.shape[1])
    tl.store(counts_ptr + split * B * row[6] + at, tl.sum(count, axis=2).to(tl.int32), mask=ok)


@triton.jit
def merged_lse(ms_ptr, rows, row_ok, splits, B):
    """[R]: lse of the rows from the S partials (m, s), read from L2 (.cg: other SMs wrote
    them)."""
    m = tl.full(rows.shape, LOWEST, tl.float32)
    s = tl.zeros(rows.shape, tl.float32)
    for p in range(0, splits):
        m_p = tl.load(ms_ptr + p * B + rows, mask=row_ok, other=LOWEST, cache_modifier=".cg")
        s_p = tl.load(ms_ptr + (splits + p) * B + rows, mask=row_ok, other=0.0,
                      cache_modifier=".cg")
        m_new = tl.maximum(m, m_p)
        s = s * tl.exp(m - m_new) + s_p * tl.exp(m_p - m_new)
        m = m_new
    return tl.where(s > 0, m, 0.0) + tl.log(tl.maximum(s, 1.0))   # s = 0 or s >= 1


@triton.jit
def finish_group(row, out, key, FIRST: tl.constexpr, LOGPROBS: tl.constexpr,
                 PROCESSED: tl.constexpr):
    """Values and ranks of one id group: z = key / t (- lse), the counts of all splits."""
    values_ptr, ranks_ptr, counts_ptr, lse, t, splits, B = out
    at, ok, live, _ = slots_of(row, FIRST, key.shape[1])
    K = row[6]
    count = tl.zeros(at.shape, tl.int32)
    for split in range(0, splits):                # .cg: from L2, written by other SMs
        count += tl.load(counts_ptr + split * B * K + at, mask=ok, other=0, cache_modifier=".cg")
    z = tl.reshape(key, at.shape)
    if PROCESSED:
        z = z / t[:, None]
    if LOGPROBS:
        z = tl.where(z == float("-inf"), float("-inf"), z - lse[:, None])
    tl.store(values_ptr + at, tl.where(live, z, float("-inf")), mask=ok)
    tl.store(ranks_ptr + at, tl.where(live, count, 0).to(tl.int64), mask=ok)


@triton.jit
def _logprobs_kernel(logits_ptr, ids_ptr, cutoff_ptr, temp_ptr, tickets_ptr, counts_ptr,
                     values_ptr, ranks_ptr, B, V, K, stride, CHUNK, LOGPROBS: tl.constexpr,
                     PROCESSED: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK: tl.constexpr,
                     G1: tl.constexpr, G2: tl.constexpr, G3: tl.constexpr,
                     GROUPS: tl.constexpr):
    """Program (r, p): rows r BLOCK_R .. + BLOCK_R - 1, columns [p CHUNK, (p + 1) CHUNK);
    the last of the row block's programs to finish writes its values and ranks. Memory
    traffic: the module docstring's (the logits once, 12 B K per split, 12 B K out)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    split, splits = tl.program_id(1), tl.num_programs(1)
    row_ok = rows < B
    lo = split * CHUNK
    hi = tl.minimum(lo + CHUNK, V)
    full_end = lo + (hi - lo) // BLOCK * BLOCK
    row_ptr = logits_ptr + rows.to(tl.int64)[:, None, None] * stride
    cols = tl.arange(0, BLOCK)[None, None, :]
    row_ok3 = row_ok[:, None, None]
    x = tl.load(row_ptr + lo + cols, mask=tl.where(lo < full_end, row_ok3, False))  # early
    cutoff = tl.full([BLOCK_R], float("-inf"), tl.float32)
    t = tl.full([BLOCK_R], 1.0, tl.float32)
    if PROCESSED:
        cutoff = tl.load(cutoff_ptr + rows, mask=row_ok, other=float("-inf"))
        t = tl.load(temp_ptr + rows, mask=row_ok, other=1.0)
    row = (logits_ptr, ids_ptr, rows, row_ok, cutoff, V, K, stride)
    keys = (requested_keys(row, 0, G1, PROCESSED), requested_keys(row, G1, G2, PROCESSED),
            requested_keys(row, G1 + G2, G3, PROCESSED))

    m = tl.full([BLOCK_R, 1, BLOCK], LOWEST, tl.float32)
    s = tl.zeros([BLOCK_R, 1, BLOCK], tl.float32)
    counts = (tl.zeros([BLOCK_R, G1, BLOCK // 4], tl.float32),
              tl.zeros([BLOCK_R, G2, BLOCK // 4], tl.float32),
              tl.zeros([BLOCK_R, G3, BLOCK // 4], tl.float32))
    for start in range(lo, full_end, BLOCK):      # whole blocks, unmasked
        ahead = tl.load(row_ptr + start + BLOCK + cols,
                        mask=tl.where(start + BLOCK < full_end, row_ok3, False))
        m, s, counts = fold(x, row_ok3, m, s, counts, keys, cutoff, t, GROUPS, LOGPROBS,
                            PROCESSED, False)
        x = ahead
    if full_end < hi:                             # the row's ragged last block
        ok = row_ok3 & (full_end + cols < hi)
        x = tl.load(row_ptr + full_end + cols, mask=ok, other=float("-inf"))
        m, s, counts = fold(x, ok, m, s, counts, keys, cutoff, t, GROUPS, LOGPROBS, PROCESSED,
                            True)

    ms_ptr = (counts_ptr + splits * B * K).to(tl.pointer_type(tl.float32))   # after [S, B, K]
    if LOGPROBS:
        m_all = tl.max(m, axis=2)
        s_all = tl.sum(s * tl.exp(m - m_all[:, :, None]), axis=2)
        at = split * B + rows[:, None]
        tl.store(ms_ptr + at, m_all, mask=row_ok[:, None])
        tl.store(ms_ptr + splits * B + at, s_all, mask=row_ok[:, None])
    store_counts(row, counts_ptr, counts[0], split, B, 0)      # absent groups: slots >= K
    store_counts(row, counts_ptr, counts[1], split, B, G1)
    store_counts(row, counts_ptr, counts[2], split, B, G1 + G2)

    tl.debug_barrier()                             # all threads' stores before the release
    ticket = tl.atomic_add(tickets_ptr + tl.program_id(0), 1)         # acq_rel, gpu scope
    if ticket == splits - 1:                       # the last: merge the S splits
        tl.atomic_xchg(tickets_ptr + tl.program_id(0), 0)             # ready for the next call
        lse = tl.zeros([BLOCK_R], tl.float32)
        if LOGPROBS:
            lse = merged_lse(ms_ptr, rows, row_ok, splits, B)
        out = (values_ptr, ranks_ptr, counts_ptr, lse, t, splits, B)
        finish_group(row, out, keys[0], 0, LOGPROBS, PROCESSED)
        if GROUPS > 1:
            finish_group(row, out, keys[1], G1, LOGPROBS, PROCESSED)
        if GROUPS > 2:
            finish_group(row, out, keys[2], G1 + G2, LOGPROBS, PROCESSED)


def row_cutoffs(logits: torch.Tensor, temperature, top_k, top_p):
    """(c float32 [B], t float32 [B]): the threshold on x of the kept set and the divisor."""
    x = logits.to(torch.float32)
    _, keep = kept_entries(x, temperature, top_k, top_p)
    cutoff = torch.where(keep, x, float("inf")).amin(dim=1)
    t = temperature.to(torch.float32)
    return cutoff.contiguous(), torch.where(t == 0, torch.ones_like(t), t).contiguous()


def id_groups(slots: int) -> tuple[int, int, int, int]:
    """(G1, G2, G3, groups): K as up to three powers of two, largest first (21 = 16 + 4 + 1;
    the third rounds up: 31 = 16 + 8 + 8); absent groups have size 1 and are skipped."""
    sizes = []
    while len(sizes) < 3 and sum(sizes) < slots:
        left = slots - sum(sizes)
        sizes.append(1 << (left.bit_length() - (len(sizes) < 2 or left & (left - 1) == 0)))
    return (*sizes, *[1] * (3 - len(sizes)), len(sizes))


def _launch_shape(batch: int, vocab: int, slots: int, device: torch.device):
    """(BLOCK_R, BLOCK, num_warps, S, CHUNK). GPU: one row per program, a row split into S
    chunks of whole blocks, S such that there are GPU_PROGRAMS_PER_SM programs per SM.
    Interpreter (it pays per program and per loop trip): blocks of up to CPU_BLOCK columns,
    as many rows as CPU_TILE holds, S = 1. SPLITS, when set, fixes S."""
    if INTERPRET or device.type != "cuda":
        block = max(4, min(CPU_BLOCK, triton.next_power_of_2(vocab)))
        tile = triton.next_power_of_2(slots) * block
        rows, warps, wanted = max(1, min(triton.next_power_of_2(batch), CPU_TILE // tile)), 4, 1
    else:
        rows, block, warps = 1, GPU_BLOCK, GPU_WARPS
        wanted = triton.cdiv(GPU_PROGRAMS_PER_SM * multiprocessors(device), batch)
    blocks = triton.cdiv(vocab, block)
    chunk = triton.cdiv(blocks, max(1, min(blocks, SPLITS or wanted))) * block
    return rows, block, warps, triton.cdiv(vocab, chunk), chunk


def logprobs_triton(logits: torch.Tensor, token_ids: torch.Tensor, mode: str,
                    temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Family ``logprobs``: (values float32 [B, K], -inf at padding; ranks int64 [B, K])."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    logits = logits.contiguous()
    token_ids = token_ids.to(torch.int64).contiguous()
    (batch, vocab), slots = logits.shape, token_ids.shape[1]
    device = logits.device
    values = torch.empty((batch, slots), dtype=torch.float32, device=device)
    ranks = torch.empty((batch, slots), dtype=torch.int64, device=device)
    if batch == 0 or slots == 0:
        return values, ranks
    logprobs, processed = mode.endswith("logprobs"), mode.startswith("processed")
    cutoff, t = row_cutoffs(logits, temperature, top_k, top_p) if processed else (values,) * 2
    block_r, block, warps, splits, chunk = _launch_shape(batch, vocab, slots, device)
    g1, g2, g3, groups = id_groups(slots)
    width = g1 + g2 * (groups > 1) + g3 * (groups > 2)
    row_blocks = triton.cdiv(batch, block_r)
    tickets, partials = split_scratch("triton-logprobs", device, row_blocks,
                                      splits * batch * (width + 2), (torch.int32,))
    args = (logits, token_ids, cutoff, t, tickets, partials, values, ranks, batch, vocab, slots,
            logits.stride(0), chunk)
    shape = dict(LOGPROBS=logprobs, PROCESSED=processed, BLOCK_R=block_r, BLOCK=block, G1=g1,
                 G2=g2, G3=g3, GROUPS=groups, num_warps=warps)
    # the interpreter computes e^-|z - m| from m = LOWEST in numpy, which warns on overflow
    with np.errstate(over="ignore") if INTERPRET else contextlib.nullcontext():
        if PRUNE:
            from kernels.logprobs.triton_logprobs_pruned import _pruned_kernel
            lanes = min(32 * warps, block // 4) if device.type == "cuda" and not INTERPRET \
                else block // 4
            limit = g1 * block_r if PRUNE_LIMIT is None else PRUNE_LIMIT
            _pruned_kernel[(row_blocks, splits)](
                *args, limit, LANES=lanes, KP=triton.next_power_of_2(slots), W=width,
                STAGES=GPU_STAGES, **shape)
        else:
            _logprobs_kernel[(row_blocks, splits)](*args, **shape)
    return values, ranks
