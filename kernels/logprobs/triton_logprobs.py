"""triton-logprobs: the values and ranks of requested token ids in one pass over the logits.

Per row, with a threshold c and a temperature t (raw modes: c = -inf, t = 1): key_j = x_j
where x_j >= c, else -inf; z_j = key_j / t. Values: z_id (logits modes) or z_id - (m + log s),
m = max z, s = sum e^(z - m) (logprobs modes); -inf at padding. Rank: #{j : key_j >= key_id},
ties counted (x -> x - lse and x -> x / t are increasing: the count on the mode's values).
Processed modes: top-k and top-p each keep a set {x >= c}, so together one threshold c per
row, computed in torch from torch-logprobs' kept set and applied on the fly.

One launch, grid (row blocks, S): program (r, p) folds columns [p C, (p + 1) C) of its rows
(C a multiple of BLOCK) into per-lane state (kernels/logprobs/rank_fold.py), a max and
sum-exp per element (one exponential e^-|z - m| that rescales s when z is the new max, else
is z's term; m starts at the lowest finite float, so no -inf - -inf, and -inf adds 0) and
per requested key a float32 count per lane of elements >= it; writes (m, s) and the counts
to a workspace; takes a ticket; the row block's last program merges the S partials and
writes values and ranks (ticket reset to 0).

Ranks cost a compare and an add per (element, id): the ids, not the bytes, bound this kernel
(an H100 element budget at the read floor is ~40 instructions). So the compares are pruned:
each program orders its row's K keys once, descending (a KP x KP comparison, ties by slot;
padding, -inf keys, whose rank is V without counting, and NaN keys go first and are never
counted), and counts by sorted position in three power-of-two groups taken from the end:
G1 + 4 + 1, the smallest key alone. An element adds to a rank only if it is >= that key, so
a block whose max is below a group's smallest key skips the group, and the groups that need
compares are a suffix of the order (the branches nest). Ids that are the row's largest (an
engine's top-20 and its sampled token) skip all but the smallest key in almost every block.
Random ids skip nothing and would pay the block max for nothing: a program whose first block
holds more than ``prune_limit`` entries at or above group 1's smallest key takes an unpruned
loop. Either loop is exact; the rule only picks the faster.

K is a runtime argument; the compiled kernel depends on K only through its bucket, G1 = the
K - 5 largest keys' group rounded up to a power of two, at least 16 (W = G1 + 5 sorted
positions, KP = W rounded up to a power of two for the order): K = 1..21, 22..37, 38..69,
... share a kernel, so a run whose batches ask for many K compiles a few kernels, not one
per K. The unused positions of a bucket hold padding keys (+inf, never counted, never
needed by the pruned loop, which skips a group of padding alone). K = 21 (top-20 and the
sampled id) lands on 16 + 4 + 1 exactly, the groups tuned on the H100. The mode is two
runtime flags (a uniform branch per block), and B, V, K and the prune limit are not
specialised: what Triton compiles depends on the logits' dtype, the bucket, the launch and
whether the row stride is a multiple of 16 (its loads' width), so a check's many generated
shapes share a handful of kernels (each costs seconds to compile).

Launch settings are keyword arguments of ``logprobs_triton`` (of ``logprobs_launch``, a
``Launch``; ``launch_for`` gives the defaults): on a GPU one row a program, BLOCK 512, one
warp (the block max a warp reduction, no barrier), the row split for 6 programs per SM, the
loops pipelined by Triton over 4 blocks (measured on an
H100 at 256x151936x21, `bench logprobs`: 0.073 ms with top ids, 72 % of the read floor;
0.088 ms with random ids; the unpruned loop at its best, 8 warps, BLOCK 1024: 0.109 ms); on a
CPU (the Triton interpreter, which pays per program and per loop trip) large blocks, many
rows a program, no split.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import triton
import triton.language as tl

from sampling_harness.kernels.logprobs.rank_fold import (
    LOWEST,
    fold,
    merged_lse,
    slot_order,
    sorted_keys,
    store_group,
    zero_counts,
)
from sampling_harness.kernels.logprobs.torch_logprobs import kept_entries
from sampling_harness.kernels.split_scratch import (
    cdiv,
    multiprocessors,
    next_power_of_2,
    split_scratch,
)

MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
SMALLEST_GROUPS = (4, 1)                         # G2, G3: the bucket's last five positions


@triton.jit(do_not_specialize=["B", "V", "K", "prune_limit", "logprobs", "processed"])
def _logprobs_kernel(logits_ptr, ids_ptr, cutoff_ptr, temp_ptr, tickets_ptr, counts_ptr,
                     values_ptr, ranks_ptr, B, V, K, stride, CHUNK, prune_limit, logprobs,
                     processed, BLOCK_R: tl.constexpr,
                     BLOCK: tl.constexpr, LANES: tl.constexpr, KP: tl.constexpr,
                     G1: tl.constexpr, G2: tl.constexpr, G3: tl.constexpr,
                     STAGES: tl.constexpr):
    """Program (r, p): rows r BLOCK_R .. + BLOCK_R - 1, columns [p CHUNK, (p + 1) CHUNK);
    the groups G1, G2, G3 take the last W = G1 + G2 + G3 of KP sorted positions (K <= W).
    Memory traffic: the logits read once (4 or 2 B V per row); per split the ids and their
    logits gathered (12 or 10 B K, L2 hits after the first), 4 W + 8 bytes of partials
    written and read once by the row's last program; values and ranks written (12 B K)."""
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
    if processed:
        cutoff = tl.load(cutoff_ptr + rows, mask=row_ok, other=float("-inf"))
        t = tl.load(temp_ptr + rows, mask=row_ok, other=1.0)

    slot, ok, live, key, skip, ck, pos = slot_order(logits_ptr, ids_ptr, rows, row_ok, cutoff,
                                                    V, K, stride, processed, KP)
    W: tl.constexpr = G1 + G2 + G3
    WS: tl.constexpr = KP - W
    keys = (sorted_keys(ck, pos, WS, G1), sorted_keys(ck, pos, WS + G1, G2),
            sorted_keys(ck, pos, WS + G1 + G2, G3))
    least = (tl.min(keys[0], axis=1), tl.min(keys[1], axis=1), tl.min(keys[2], axis=1))

    m = tl.full([BLOCK_R, 1, BLOCK], LOWEST, tl.float32)
    s = tl.zeros([BLOCK_R, 1, BLOCK], tl.float32)
    counts = (zero_counts(BLOCK_R, G1, LANES), zero_counts(BLOCK_R, G2, LANES),
              zero_counts(BLOCK_R, G3, LANES))
    first = x.to(tl.float32)       # prune unless the first block holds more than prune_limit
    if processed:                  # entries at or above group 1's smallest key
        first = tl.where(first >= cutoff[:, None, None], first, float("-inf"))
    prune = tl.sum(tl.where(first >= least[0][:, :, None], 1, 0)) <= prune_limit
    if prune:                      # two loops, no branch per block, each pipelined by Triton
        for start in tl.range(lo, full_end, BLOCK, num_stages=STAGES):
            xb = tl.load(row_ptr + start + cols, mask=row_ok3)   # whole blocks, unmasked
            m, s, counts = fold(xb, row_ok3, m, s, counts, keys, least, cutoff, t, logprobs,
                                processed, LANES, False, True)
    else:
        for start in tl.range(lo, full_end, BLOCK, num_stages=STAGES):
            xb = tl.load(row_ptr + start + cols, mask=row_ok3)
            m, s, counts = fold(xb, row_ok3, m, s, counts, keys, least, cutoff, t, logprobs,
                                processed, LANES, False, False)
    if full_end < hi:                             # the row's ragged last block
        ok3 = row_ok3 & (full_end + cols < hi)
        x = tl.load(row_ptr + full_end + cols, mask=ok3, other=float("-inf"))
        m, s, counts = fold(x, ok3, m, s, counts, keys, least, cutoff, t, logprobs,
                            processed, LANES, True, True)

    ms_ptr = (counts_ptr + splits * B * W).to(tl.pointer_type(tl.float32))   # after [S, B, W]
    if logprobs:
        m_all = tl.max(m, axis=2)
        s_all = tl.sum(s * tl.exp(m - m_all[:, :, None]), axis=2)
        at = split * B + rows[:, None]
        tl.store(ms_ptr + at, m_all, mask=row_ok[:, None])
        tl.store(ms_ptr + splits * B + at, s_all, mask=row_ok[:, None])
    store_group(counts_ptr, counts[0], rows, row_ok, split, B, W, 0)
    store_group(counts_ptr, counts[1], rows, row_ok, split, B, W, G1)
    store_group(counts_ptr, counts[2], rows, row_ok, split, B, W, G1 + G2)

    tl.debug_barrier()                             # all threads' stores before the release
    ticket = tl.atomic_add(tickets_ptr + tl.program_id(0), 1)         # acq_rel, gpu scope
    if ticket == splits - 1:                       # the last: merge the S splits
        tl.atomic_xchg(tickets_ptr + tl.program_id(0), 0)             # ready for the next call
        counted = live & ~skip
        spot = rows.to(tl.int64)[:, None] * W + pos - WS   # the slot's sorted position
        count = tl.zeros([BLOCK_R, KP], tl.int32)
        for p in range(0, splits):                # .cg: from L2, written by other SMs
            count += tl.load(counts_ptr + p * B * W + spot, mask=counted, other=0,
                             cache_modifier=".cg")
        rank = tl.where(counted, count, tl.where(live & (key == float("-inf")), V, 0))
        z = key / t[:, None]                       # t = 1 in the raw modes
        if logprobs:
            lse = merged_lse(ms_ptr, rows, row_ok, splits, B)
            z = tl.where(z == float("-inf"), float("-inf"), z - lse[:, None])
        out = rows.to(tl.int64)[:, None] * K + slot[None, :]
        tl.store(values_ptr + out, tl.where(live, z, float("-inf")), mask=ok)
        tl.store(ranks_ptr + out, rank.to(tl.int64), mask=ok)


@dataclass(frozen=True)
class Launch:
    """How ``_logprobs_kernel`` is launched (``launch_for``: the defaults)."""

    block: int                   # columns a block (a multiple of 4 lanes)
    warps: int
    rows: int = 1                # rows a program
    splits: int = 1              # programs a row (capped by its blocks)
    stages: int = 4              # blocks in flight in Triton's pipelined loops
    prune_limit: int | None = None   # the rule's limit (None: group 1's size, per row; -1:
    # never prune; a large number: always)
    maxnreg: int | None = None   # a GPU's registers a thread at most (None: the compiler's)


@dataclass(frozen=True)
class Plan:
    """A launch worked out for one (B, V, K, device): the grid, the kernel's scalar and
    constexpr arguments (``plan_for``), held by ``logprobs_triton`` between calls."""

    launch: Launch
    row_blocks: int
    splits: int
    chunk: int
    limit: int
    partials: int                # workspace entries: S B (W + 2)
    constexprs: dict


# logprobs_triton's keyword launch settings default to these (bound at import: patching
# them changes nothing)
GPU = Launch(block=512, warps=1, stages=4)      # swept on an H100 (module docstring)
GPU_PROGRAMS_PER_SM = 6
CPU_BLOCK, CPU_TILE = 4096, 2**20    # CPU: columns a block at most; entries (rows x KP x block)
PLANS_HELD = 4096                    # plans logprobs_triton keeps (a check's many shapes)
_PLANS: dict = {}


def id_groups(slots: int) -> tuple[int, int, int]:
    """(G1, G2, G3) of K = ``slots``: (max(16, next_pow2(K - 5)), 4, 1) (module docstring)."""
    return (max(16, next_power_of_2(max(slots - 5, 1))), *SMALLEST_GROUPS)


def launch_for(batch: int, vocab: int, slots: int, device: torch.device, gpu: Launch = GPU,
               programs_per_sm: int = GPU_PROGRAMS_PER_SM) -> Launch:
    """The launch of ``logprobs_triton``: GPU, ``gpu`` (one row a program) with the row split
    for ``programs_per_sm`` programs per SM; CPU (the interpreter pays per program and per
    loop trip), blocks of up to CPU_BLOCK columns and under V (so that a CPU run takes the
    whole-block loops as well as the ragged last block), as many rows a program as CPU_TILE
    holds, one program a row, ``gpu``'s prune limit."""
    if device.type == "cuda":
        wanted = cdiv(programs_per_sm * multiprocessors(device), batch)
        return replace(gpu, splits=wanted)
    block = max(4, min(CPU_BLOCK, next_power_of_2(vocab) // 2))
    tile = next_power_of_2(sum(id_groups(slots))) * block
    return Launch(block=block, warps=4, rows=max(1, min(next_power_of_2(batch),
                                                        CPU_TILE // tile)),
                  prune_limit=gpu.prune_limit)


def split_columns(vocab: int, block: int, wanted: int) -> tuple[int, int]:
    """(S, CHUNK): a row split into S chunks of whole blocks, at most ``wanted`` and at most
    one a block, none empty."""
    blocks = cdiv(vocab, block)
    chunk = cdiv(blocks, max(1, min(blocks, wanted))) * block
    return cdiv(vocab, chunk), chunk


def plan_for(batch: int, vocab: int, slots: int, launch: Launch) -> Plan:
    """The grid and the launch-dependent arguments of ``_logprobs_kernel`` (pure)."""
    g1, g2, g3 = id_groups(slots)
    width = g1 + g2 + g3
    splits, chunk = split_columns(vocab, launch.block, launch.splits)
    lanes = min(32 * launch.warps, launch.block // 4)   # a CPU's blocks too: reps > 1 tested
    limit = g1 * launch.rows if launch.prune_limit is None else launch.prune_limit
    return Plan(launch=launch, row_blocks=cdiv(batch, launch.rows), splits=splits,
                chunk=chunk, limit=limit, partials=splits * batch * (width + 2),
                constexprs=dict(BLOCK_R=launch.rows, BLOCK=launch.block, LANES=lanes,
                                KP=next_power_of_2(width), G1=g1, G2=g2, G3=g3,
                                STAGES=launch.stages, num_warps=launch.warps,
                                **({"maxnreg": launch.maxnreg} if launch.maxnreg else {})))


def row_cutoffs(logits: torch.Tensor, temperature, top_k, top_p):
    """(c float32 [B], t float32 [B]): the threshold on x of the kept set and the divisor."""
    x = logits.to(torch.float32)
    _, keep = kept_entries(x, temperature, top_k, top_p)
    cutoff = torch.where(keep, x, float("inf")).amin(dim=1)
    t = temperature.to(torch.float32)
    return cutoff.contiguous(), torch.where(t == 0, torch.ones_like(t), t).contiguous()


def run_plan(plan: Plan | None, logits: torch.Tensor, token_ids: torch.Tensor, mode: str,
             temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, ranks) of one call under ``plan`` (None only where B or K is 0). The host
    path of an eager call: no dispatch for inputs already contiguous (the usual case), two
    allocations, the held workspace's lookup, one launch."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    if not logits.is_contiguous():
        logits = logits.contiguous()
    if token_ids.dtype != torch.int64 or not token_ids.is_contiguous():
        token_ids = token_ids.to(torch.int64).contiguous()
    (batch, vocab), slots = logits.shape, token_ids.shape[1]
    device = logits.device
    values = torch.empty((batch, slots), dtype=torch.float32, device=device)
    ranks = torch.empty((batch, slots), dtype=torch.int64, device=device)
    if batch == 0 or slots == 0:
        return values, ranks
    logprobs, processed = mode.endswith("logprobs"), mode.startswith("processed")
    cutoff, t = row_cutoffs(logits, temperature, top_k, top_p) if processed else (values,) * 2
    tickets, partials = split_scratch("triton-logprobs", device, plan.row_blocks,
                                      plan.partials, (torch.int32,))
    args = (logits, token_ids, cutoff, t, tickets, partials, values, ranks, batch, vocab, slots,
            logits.stride(0), plan.chunk, plan.limit, int(logprobs), int(processed))
    if device.type == "cuda":
        _logprobs_kernel[(plan.row_blocks, plan.splits)](*args, **plan.constexprs)
    else:     # a CPU computes e^-|z - m| from m = LOWEST in numpy, which warns on overflow
        with np.errstate(over="ignore"):
            _logprobs_kernel[(plan.row_blocks, plan.splits)](*args, **plan.constexprs)
    return values, ranks


def logprobs_launch(logits: torch.Tensor, token_ids: torch.Tensor, mode: str,
                    temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor,
                    launch: Launch | None = None, gpu: Launch = GPU,
                    programs_per_sm: int = GPU_PROGRAMS_PER_SM
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """``logprobs_triton`` under ``launch`` (None: ``launch_for``'s with ``gpu`` and
    ``programs_per_sm``)."""
    (batch, vocab), slots = logits.shape, token_ids.shape[1]
    plan = None
    if batch and slots:
        launch = launch or launch_for(batch, vocab, slots, logits.device, gpu, programs_per_sm)
        plan = plan_for(batch, vocab, slots, launch)
    return run_plan(plan, logits, token_ids, mode, temperature, top_k, top_p)


def logprobs_triton(logits: torch.Tensor, token_ids: torch.Tensor, mode: str,
                    temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, *,
                    block: int = GPU.block, warps: int = GPU.warps, stages: int = GPU.stages,
                    programs_per_sm: int = GPU_PROGRAMS_PER_SM,
                    prune_limit: int | None = GPU.prune_limit, maxnreg: int | None = GPU.maxnreg
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Family ``logprobs``: (values float32 [B, K], -inf at padding; ranks int64 [B, K]).
    Launch settings (keywords, ``bench --launch``): on a GPU the ``block`` width, ``warps``,
    the loops' ``stages`` and ``programs_per_sm`` (the split; the interpreter takes its own
    blocks) and the register cap ``maxnreg``; on both the ``prune_limit`` (``Launch``). The
    plan of each (B, V, K, device, settings) is held, so an eager call's host work is a
    dictionary lookup and ``run_plan``."""
    (batch, vocab), slots = logits.shape, token_ids.shape[1]
    device = logits.device
    key = (batch, vocab, slots, device, block, warps, stages, programs_per_sm, prune_limit,
           maxnreg)
    plan = _PLANS.get(key)
    if plan is None and batch and slots:
        gpu = Launch(block=block, warps=warps, stages=stages, prune_limit=prune_limit,
                     maxnreg=maxnreg)
        plan = plan_for(batch, vocab, slots,
                        launch_for(batch, vocab, slots, device, gpu, programs_per_sm))
        if len(_PLANS) >= PLANS_HELD:
            _PLANS.clear()
        _PLANS[key] = plan
    return run_plan(plan, logits, token_ids, mode, temperature, top_k, top_p)
