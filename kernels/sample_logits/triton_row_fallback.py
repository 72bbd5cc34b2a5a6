"""The rows ``_select_race`` leaves unresolved, on the device, with no host synchronisation.

Those rows are: no filter, top-p alone whose set the candidates do not hold, k > KMAX, and
more candidates than the scratch holds. Their flags stay on the device: the kernel is
launched over every row (a static grid, capturable in a CUDA graph), and a program whose
rows are all resolved returns after reading their flags.

A flagged row (one program when it has a search; split over S programs when it has none):

1. x_(k), when 0 < k < V: the k-th largest order-preserving int32 key, by a WAYS-way search
   over [key(-inf), key(+inf)] with [lo, hi] holding it and #{key >= lo} >= k throughout:
   each pass counts the keys >= each of WAYS probes over the whole row and narrows the range
   about WAYS + 1 times (at most 11 passes for 2^32 keys at 8 ways; a bisection takes 32),
   or ends once exactly k keys reach lo: x_(k) is then the least of them (one more pass,
   a minimum);
2. top-p on {x >= x_(k)}, when top_p < 1: c = the smallest key >= x_(k) whose strictly
   greater mass is below top_p W, W the float64 sum of the kept set's float32 weights
   exp(z - top), z = x / T (kernels/sample_logits/triton_top_p_search.py: the same search,
   each pass the masses above the probes, its probes spaced by value at first, and the last
   passes over a scratch copy of the range once it holds at most CAP entries): the kept
   prefix in descending order whose exclusive cumulative mass is below top_p W, the largest
   always kept, ties with c kept;
3. the race over {x >= c} with the noise of (row, column) (race_noise.py), the noise of the
   candidates' race: the same kept set draws the same winner either way. A greedy row takes
   its first maximal column instead. A row without a search races its columns split: each
   program writes its (score, column) partial and takes a ticket, and the row block's last
   program merges the S partials, the earliest split winning ties (``publish_split``).

Memory traffic: unflagged rows, one int8 flag read. A flagged row: read once per pass (the
race, up to 12 passes for x_(k), and the top-p search's, triton_top_p_search.py), 12 B per
split partial, 4 CAP bytes of top-p scratch, one id written. Slow (docs/measurements/bench.md: 256
rows of 151936 with 17,000-token top-p sets), but the engine's usual rows (greedy, top-k <=
KMAX with or without top-p, top-p alone with a peaked head) never come here.
"""

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.sample.triton_race import publish_split
from sampling_harness.kernels.sample_logits.race_noise import scores
from sampling_harness.kernels.sample_logits.triton_row_tiles import (
    KEY_NEG_INF,
    KEY_POS_INF,
    WAYS,
    fold_tiles,
    pick,
    probes,
    row_tile,
)
from sampling_harness.kernels.sample_logits.triton_top_k_select import ordered, value_of_key
from sampling_harness.kernels.sample_logits.triton_top_p_search import CAP, row_top_p_key
from sampling_harness.kernels.split_scratch import (
    cdiv,
    multiprocessors,
    next_power_of_2,
    split_scratch,
)


@triton.jit
def add_reached(reached, x, inside, probe, kth, t, z_top):
    """reached [R, WAYS, SEARCH] += (key >= probe) of a tile x [R, SEARCH] (int32; a
    ``fold_tiles`` fold: kth, t and z_top unused)."""
    reach = inside[:, None, :] & (ordered(x)[:, None, :] >= probe.to(tl.int32)[:, :, None])
    return reached + reach.to(tl.int32)


@triton.jit
def least_reached(least, x, inside, lo, kth, t, z_top):
    """least [R, SEARCH] = min(least, key) over the keys >= lo of a tile x [R, SEARCH]
    (a ``fold_tiles`` fold: kth, t and z_top unused)."""
    key = ordered(x)
    return tl.where(inside & (key >= lo[:, None]), tl.minimum(least, key), least)


@triton.jit
def row_kth_key(logits_ptr, rows64, ok, stride, V, n, SEARCH: tl.constexpr,
                UNROLL: tl.constexpr):
    """The n-th largest key of each row (1 <= n <= V), by a WAYS-way search (step 1): the
    largest probe that n keys reach is the new lo, the next probe less one the new hi. A
    row is settled once exactly n keys reach its lo: the n-th largest is then the least of
    them, found by one pass after the search (where lo = hi it is lo itself). Rows whose
    top set is small and spread (ties, a few large logits) so end after a pass or two
    instead of the 11 that narrow 2^32 keys to one."""
    lo = tl.zeros(n.shape, tl.int64) + KEY_NEG_INF
    hi = tl.zeros(n.shape, tl.int64) + KEY_POS_INF
    settled = n < 0
    while tl.max(((hi - lo) > 0) & ~settled) > 0:   # at most 11 passes at 8 ways
        probe = probes(lo, hi, 1)
        reached = tl.zeros([n.shape[0], WAYS, SEARCH], tl.int32)   # summed once per pass
        for start in range(0, V, SEARCH * UNROLL):
            reached = fold_tiles(reached, add_reached, logits_ptr, rows64, ok, stride, V,
                                 start, probe, n, n, n, SEARCH, UNROLL)
        count = tl.sum(reached, axis=2)
        m = tl.sum((count >= n[:, None]).to(tl.int32), axis=1)     # probes 0 .. m - 1 reach n
        open_ = (lo < hi) & ~settled
        lo_next = tl.where(m > 0, pick(probe, m - 1), lo)
        hi_next = tl.where(m < WAYS, pick(probe, m) - 1, hi)
        settled = settled | (open_ & (m > 0) & (pick(count, m - 1) == n))
        lo = tl.where(open_, lo_next, lo)
        hi = tl.where(open_, hi_next, hi)
    least = tl.zeros([n.shape[0], SEARCH], tl.int32) + KEY_POS_INF
    for start in range(0, V, SEARCH * UNROLL):
        least = fold_tiles(least, least_reached, logits_ptr, rows64, ok, stride, V, start,
                           lo, n, n, n, SEARCH, UNROLL)
    return tl.min(least, axis=1)


@triton.jit
def race_columns(logits_ptr, rows64, flagged, stride, V, cutoff, t, greedy, seed, first, last,
                 BLOCK: tl.constexpr):
    """(best score, its column) over columns [first, last): the race over {x >= c}, or the
    first maximal x in greedy rows (the lowest column on ties)."""
    best = tl.full(cutoff.shape, float("-inf"), tl.float32)
    best_col = tl.zeros(cutoff.shape, tl.int64) + first
    for start in range(first, last, BLOCK):
        x, cols, inside = row_tile(logits_ptr, rows64, flagged, stride, V, start, BLOCK)
        s = scores(x, cutoff[:, None], t[:, None], seed, rows64[:, None], cols, V)
        s = tl.where(greedy[:, None] & inside, x, s)
        top, arg = tl.max(s, axis=1, return_indices=True, return_indices_tie_break_left=True)
        better = top > best
        best = tl.where(better, top, best)
        best_col = tl.where(better, arg.to(tl.int64) + start, best_col)
    return best, best_col


@triton.jit(do_not_specialize=["seed", "B", "V", "splits", "copy_rows"])
def _fallback_race(logits_ptr, temp_ptr, topk_ptr, topp_ptr, unresolved_ptr, ids_ptr, best_ptr,
                   part_ptr, tickets_ptr, cand_ptr, seed, B, V, stride, per_split, splits,
                   copy_rows,
                   BLOCK_R: tl.constexpr, BLOCK: tl.constexpr, SEARCH: tl.constexpr,
                   UNROLL: tl.constexpr, SPLIT: tl.constexpr):
    """Programs (row block, split): steps 1-3 of the module docstring for the flagged rows.
    A row block with a search (top-k or top-p) is searched and raced whole by its split 0
    (its other splits return at once: S copies of the search would cost S times as much);
    a block without one (no filter, greedy) races its columns split.
    Memory traffic: the module's."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    split = tl.program_id(1)
    ok = rows < B
    flagged = ok & (tl.load(unresolved_ptr + rows, mask=ok, other=0) != 0)
    t = tl.load(temp_ptr + rows, mask=flagged, other=1.0)
    k = tl.load(topk_ptr + rows, mask=flagged, other=0)
    top_p = tl.load(topp_ptr + rows, mask=flagged, other=1.0)
    greedy = t == 0.0
    safe_t = tl.where(greedy, 1.0, t)
    top_k = flagged & ~greedy & (k > 0) & (k < V)
    nucleus = flagged & ~greedy & (top_p < 1.0)
    searched = tl.max((top_k | nucleus).to(tl.int32))
    if (tl.max(flagged.to(tl.int32)) > 0) & ((split == 0) | (searched == 0)):
        rows64 = rows.to(tl.int64)
        kth = tl.zeros([BLOCK_R], tl.int32) + KEY_NEG_INF
        if tl.max(top_k.to(tl.int32)) > 0:
            kth = tl.where(top_k, row_kth_key(logits_ptr, rows64, top_k, stride, V, k, SEARCH,
                                              UNROLL), kth)
        key = kth
        if tl.max(nucleus.to(tl.int32)) > 0:
            key = tl.where(nucleus, row_top_p_key(logits_ptr, cand_ptr, rows64, nucleus, stride,
                                                  V, kth, safe_t, top_p, rows < copy_rows,
                                                  BLOCK, SEARCH, UNROLL), kth)
        cutoff = value_of_key(key)
        first = tl.where(searched > 0, 0, split * per_split)   # a searched block: whole rows
        last = tl.where(searched > 0, V, tl.minimum(split * per_split + per_split, V))
        best, won = race_columns(logits_ptr, rows64, flagged, stride, V, cutoff, safe_t, greedy,
                                 seed, first, last, BLOCK)
        if SPLIT:
            if searched == 0:
                publish_split(best_ptr, part_ptr, ids_ptr, tickets_ptr, rows, flagged, best,
                              won, B, splits)
            else:
                tl.store(ids_ptr + rows, won, mask=flagged)
        else:
            tl.store(ids_ptr + rows, won, mask=flagged)


# fallback_race's keyword launch settings (sample_logits_triton's fallback_*) default to
# these, bound at import:
GPU_BLOCK, GPU_SEARCH, GPU_WARPS = 2048, 512, 8   # race tile, search tile (a search pass
# accumulates per element in a [WAYS, SEARCH] tile, in registers, and reduces it once)
GPU_PROGRAMS_PER_SM = 4          # the columns split until the grid has this many per SM
COPY_ROWS = 4096                 # rows with top-p scratch (CAP float32 each, 64 MB in all):
# the rows of larger batches search their whole rows to the end
GPU_REGS = 128                   # registers a thread at most: two programs of 8 warps an SM
# (the top-p search's state took the compiler to 184, one program an SM)
GPU_UNROLL = 8                   # search tiles read at once (1, 4 or 8): a pass over a row in
# one program waits on its loads; one tile in flight is about 0.7 TB/s over the batch
UNROLLS = (1, 4, 8)
CPU_TILE = 2**17                 # row entries a program holds on a CPU (its search compares
# them with WAYS probes at once: 2^20 entries, Triton's largest tensor)
CPU_CALL = 1 << 21               # the interpreter's cost of one operation, in entries touched


def cpu_block(batch: int, vocab: int) -> int:
    """The CPU tile's columns: the power of two in [64, 4096] (at most V's) that costs the
    interpreter least, CPU_CALL entries per operation on a tile (each pass makes a few) plus one per
    entry it touches (WAYS per row entry in a search): wide tiles for a few rows, narrow
    ones that pad the row less for many (1024 rows of 4099 columns: 33 tiles of 128)."""
    def cost(block: int) -> int:
        rows = max(1, min(next_power_of_2(batch), CPU_TILE // block))
        per_op = CPU_CALL + WAYS.value * rows * block
        return cdiv(batch, rows) * cdiv(vocab, block) * per_op

    widest = max(64, min(4096, next_power_of_2(vocab)))
    return min((1 << b for b in range(12, 5, -1) if 1 << b <= widest), key=cost)


def fallback_launch(batch: int, vocab: int, device: torch.device, block: int, search: int,
                    warps: int, programs_per_sm: int, unroll: int = GPU_UNROLL):
    """(BLOCK_R, BLOCK, SEARCH, splits, warps, UNROLL): on a CPU (the Triton interpreter pays
    per program and per reduction) CPU_TILE entries a program, no split, one search tile at
    a time; on a GPU one row a program, tiles of ``block`` (race) and ``search`` columns,
    ``unroll`` search tiles read at once, ``warps``, the columns split until there are
    ``programs_per_sm`` programs per SM (rows with a search are not split:
    ``_fallback_race``)."""
    if unroll not in UNROLLS:
        raise ValueError(f"fallback unroll must be one of {UNROLLS}, got {unroll}")
    if device.type != "cuda":
        block = cpu_block(batch, vocab)
        rows = max(1, min(next_power_of_2(batch), CPU_TILE // block))
        return rows, block, block, 1, 4, 1
    wanted = programs_per_sm * multiprocessors(device) // batch
    splits = max(1, min(cdiv(vocab, block), wanted))
    return 1, block, search, splits, warps, unroll


def fallback_race(logits, temperature, top_k, top_p, unresolved, ids, seed, *,
                  block: int = GPU_BLOCK, search: int = GPU_SEARCH, warps: int = GPU_WARPS,
                  programs_per_sm: int = GPU_PROGRAMS_PER_SM, unroll: int = GPU_UNROLL,
                  regs: int = GPU_REGS) -> None:
    """Write the ids of the rows ``unresolved`` (int8 [B]) flags into ``ids`` (int64 [B]):
    one launch over every row, whatever the flags say (no synchronisation). The keywords:
    launch settings on a GPU (``fallback_launch``; ``regs`` caps a thread's registers, 0 the
    compiler's count)."""
    batch, vocab = logits.shape
    device = logits.device
    block_r, block, search, splits, warps, unroll = fallback_launch(
        batch, vocab, device, block, search, warps, programs_per_sm, unroll)
    per_split = cdiv(cdiv(vocab, splits), block) * block
    splits = cdiv(vocab, per_split)
    row_blocks = cdiv(batch, block_r)
    tickets, best, part = split_scratch(
        "triton-sample-logits-fallback", device, row_blocks, splits * batch,
        (torch.float32, torch.int64)) if splits > 1 else (ids, ids, ids)
    copy_rows = min(batch, COPY_ROWS)              # the top-p search's scratch rows
    _, cand = split_scratch("triton-sample-logits-top-p", device, 1,
                            max(copy_rows, 1) * CAP.value, (torch.float32,))
    _fallback_race[(row_blocks, splits)](
        logits, temperature, top_k, top_p, unresolved, ids, best, part, tickets, cand, seed,
        batch, vocab, logits.stride(0), per_split, splits, copy_rows, BLOCK_R=block_r, BLOCK=block,
        SEARCH=search, UNROLL=unroll, SPLIT=splits > 1, num_warps=warps,
        **({"maxnreg": regs} if regs and device.type == "cuda" else {}))
