"""The top-k, greedy and top-p-alone rows of triton-sample-logits in one launch: select,
top-p, race, on the device.

Given the max of every group of S columns (``_group_max``, one read of the row), a row with
0 < k <= KMAX keeps the set {x >= x_(k)}, x_(k) its k-th largest entry. Let tau be at most
the k-th largest group max: k groups then each hold an entry >= tau, so x_(k) >= tau, and
every entry >= x_(k) lies in a group whose max is >= tau. So the candidates
{x >= tau}, gathered from those groups alone, hold the whole top-k set with its ties, and
top-p and the race need nothing else of the row. A greedy row (temperature 0) takes n = 1:
the row max is among its candidates, and the lowest column holding it wins. A row with top-p
alone takes n = NUCLEUS_GROUPS: its candidates are the row's largest entries, and every
entry outside them is below tau; so if their mass reaches top_p times the row's mass Z (a
float64 sum over the group masses of ``_group_max``, each scaled by exp(group max z - top)),
the top-p set lies among them. Otherwise the row is flagged (``reached`` false).

Per row, one program:
1. tau by bisection on the order-preserving int32 keys of the floats (each halving a count
   over GP <= 2048 maxima in registers; no sort), stopped once between k and k + k / 4 + 1
   groups reach it;
2. the selected groups' indices compacted (a prefix sum) into a scratch row, ascending;
3. their entries >= tau compacted, ascending by column, into a candidate scratch row
   (values and columns, at most CMAX; more is an overflow, the row left to the caller), a
   step of TILE entries at a time, each step's entries read during the step before
   (PREFETCH);
4. x_(k), then top-p on {x >= x_(k)} in float64: in descending order the kept prefix whose
   exclusive cumulative mass is below top_p times the set's mass, or Z with top-p alone
   (the first always kept),
   which gives the row's threshold c. Up to SMALL candidates (the usual k + a few) are put
   in order by rank (an N x N comparison, each value stored at its rank) and summed with a
   prefix sum; more are solved by bisection: x_(k) as above, c as the smallest key whose
   strictly greater mass is below the bound (no sort either way);
5. the race over the candidates >= c with the exact-tail noise of (row, column), the same
   noise as the full-row race, so both draw the same winner from the same kept set.

Memory traffic per row: the group maxima read (4 B G); the selected groups re-read (about
k S entries; 4.3 % of a 151936-column row at k = 50, S = 128) and their candidates written and read
back (8 B each, L2); one id and one flag written.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_wait

from sampling_harness.kernels.sample_logits.race_noise import finite_or_masked, scores
from sampling_harness.kernels.split_scratch import cdiv, next_power_of_2, split_scratch

CMAX = tl.constexpr(2048)      # candidates a row may gather
GPU_SMALL, CPU_SMALL = 128, 16  # up to this many candidates: thresholds by rank (an N x N
# tile a row; a program of many rows, on a CPU, smaller), else by bisection
TILE, CPU_TILE = 2048, 1024    # entries of the selected groups read per step (GPU, CPU)
CPU_RACE = 64                  # candidates the race reads at a time on a CPU (a row's count
# is mostly k + a few: a trip of 64 costs the interpreter less than one over NMAX columns)
# GPU_SMALL and TILE: the defaults of select_race's ``small`` and ``tile`` (and of
# sample_logits_triton's select_small and select_tile), bound at import
CPU_NUMEL = 1 << 20            # a CPU program's widest tensor (Triton's limit): its rows
SCRATCH_BYTES = 1 << 28        # the scratch of one launch (the rows beyond take more launches)
GROUPS = 1024                  # group maxima a GPU program holds (2 GROUPS for rows of more)
MOST_GROUPS = 1536             # group maxima a row has at most, by default (triton_filtered_race:
# S the narrowest power of two that leaves no more; at most CMAX, the group list's scratch)
NUCLEUS_GROUPS = 256           # top-p alone: candidates from the groups of the 256 largest maxima


@triton.jit
def first_max_index(values, at):
    """The column ``at`` of the first maximal ``values`` entry per row."""
    _, arg = tl.max(values, axis=1, return_indices=True, return_indices_tie_break_left=True)
    j = tl.arange(0, values.shape[1])[None, :]
    return tl.sum(tl.where(j == arg[:, None], at, 0), axis=1)


@triton.jit
def ordered(x):
    """int32 keys in the order of the float32 values x (-0.0 as +0.0; -inf lowest)."""
    bits = tl.where(x == 0.0, 0.0, x).to(tl.int32, bitcast=True)
    return tl.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)


@triton.jit
def value_of_key(key):
    """The float32 value whose order-preserving key is ``key`` (``ordered``'s inverse)."""
    bits = tl.where(key >= 0, key, key ^ 0x7FFFFFFF)
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def nth_largest(keys, n, slack):
    """A key T <= the n-th largest of ``keys`` [R, N] per row (1 <= n <= N) with
    n <= #{key >= T} <= n + slack, by bisection on the key: [lo, hi] holds the answer and
    #{key >= lo} >= n throughout; it stops when the range holds one key (T = the n-th
    largest; at most 32 halvings) or the count at lo is within the slack. Either way
    {key >= T} holds the n largest with all their ties; with slack 0 it is exactly that
    set (a count of n at lo leaves no key between lo and the n-th largest)."""
    lo = tl.min(keys, axis=1).to(tl.int64)
    hi = tl.max(keys, axis=1).to(tl.int64)
    above = tl.sum(tl.full(keys.shape, 1, tl.int32), axis=1)
    while tl.max(((hi > lo) & (above > n + slack)).to(tl.int32)) > 0:
        mid = (lo + hi + 1) >> 1
        count = tl.sum((keys >= mid.to(tl.int32)[:, None]).to(tl.int32), axis=1)
        enough = count >= n
        lo = tl.where(enough, mid, lo)
        above = tl.where(enough, count, above)
        hi = tl.where(enough, hi, mid - 1)
    return lo.to(tl.int32)


@triton.jit
def top_p_key(keys, w, bound, lo, hi):
    """The smallest key T in [lo, hi] with sum(w where key > T) < bound: where ``keys`` are
    taken in descending order, the last whose exclusive cumulative mass is below the bound
    (ties with it kept); ``hi`` (the largest, always kept) when the bound is 0."""
    lo, hi = lo.to(tl.int64), hi.to(tl.int64)
    while tl.max(hi - lo) > 0:                 # at most 32 halvings
        mid = (lo + hi) >> 1
        below = tl.sum(tl.where(keys > mid.to(tl.int32)[:, None], w, 0.0), axis=1) < bound
        hi = tl.where(below, mid, hi)
        lo = tl.where(below | (lo == hi), lo, mid + 1)     # a settled row stays settled
    return lo.to(tl.int32)


@triton.jit
def value_of(keys, vals, key):
    """The value whose key is ``key`` [R] (the least value with a key >= it)."""
    return tl.min(tl.where(keys >= key[:, None], vals, float("inf")), axis=1)


@triton.jit
def top_p_threshold(vals, keys, kth, t, top_p, row_mass):
    """(c [R], reached [R]): top-p on the kept set {x >= kth} of the candidates ``vals``
    [R, N] (keys ``keys``, ``kth`` a key), in float64 from the float32 quotients x / T: the
    smallest kept value whose exclusive cumulative mass, in descending order, is below
    top_p times the set's mass, or ``row_mass`` where that is positive (the whole row's,
    relative to its largest z: top-p alone), the largest always kept; x_(k) itself where
    top_p >= 1. reached: the kept candidates' mass reaches the bound (nothing outside them
    can be kept)."""
    keep = keys >= kth[:, None]
    z = (tl.where(keep, vals, 0.0) / t[:, None]).to(tl.float64)
    top = tl.max(tl.where(keep, z, float("-inf")), axis=1)
    top = tl.where(top > float("-inf"), top, 0.0)        # rows with nothing kept: unused
    w = tl.where(keep, tl.exp(tl.minimum(z - top[:, None], 0.0)), 0.0)
    mass = tl.sum(w, axis=1)
    bound = top_p.to(tl.float64) * tl.where(row_mass > 0.0, row_mass, mass)
    key = top_p_key(keys, w, bound, kth, tl.max(keys, axis=1))
    return value_of(keys, vals, tl.where(top_p >= 1.0, kth, key)), mass >= bound


@triton.jit
def sorted_by_rank(vals, scratch_ptr, row_ok):
    """``vals`` [R, N] in descending order, ties by position: each value's rank is the count
    of values ahead of it (an N x N comparison), and it is stored at its rank in
    ``scratch_ptr`` [R, N] (a permutation) and read back in order (rows ``row_ok``)."""
    j = tl.arange(0, vals.shape[1])
    a, b = vals[:, :, None], vals[:, None, :]
    ahead = (b > a) | ((b == a) & (j[None, None, :] < j[None, :, None]))
    rank = tl.sum(ahead.to(tl.int32), axis=2)
    tl.store(scratch_ptr + rank, vals, mask=row_ok[:, None])
    tl.debug_barrier()                         # the ranked values, written above, read below
    return tl.load(scratch_ptr + j[None, :], mask=row_ok[:, None], other=float("-inf"))


@triton.jit
def sorted_top_p(ranked, k, t, top_p, row_mass):
    """(c [R], reached [R]): top-k and top-p on ``ranked`` [R, N] (descending): x_(k), then
    in float64 from the float32 quotients x / T the smallest kept value whose exclusive
    cumulative mass is below top_p times the kept set's mass, or ``row_mass`` where that is
    positive (as ``top_p_threshold``), the first always kept; x_(k) where top_p >= 1."""
    j = tl.arange(0, ranked.shape[1])[None, :]
    kth = tl.max(tl.where(j == k[:, None] - 1, ranked, float("-inf")), axis=1)
    keep = ranked >= kth[:, None]
    z = (tl.where(keep, ranked, 0.0) / t[:, None]).to(tl.float64)
    top = tl.max(tl.where(j == 0, z, float("-inf")), axis=1)
    top = tl.where(top > float("-inf"), top, 0.0)        # rows with no candidates: unused
    w = tl.where(keep & (ranked > float("-inf")), tl.exp(tl.minimum(z - top[:, None], 0.0)),
                 0.0)
    mass = tl.sum(w, axis=1)
    bound = top_p.to(tl.float64) * tl.where(row_mass > 0.0, row_mass, mass)
    before = tl.cumsum(w, axis=1) - w
    inside = keep & ((before < bound[:, None]) | (j == 0))
    cutoff = tl.min(tl.where(inside, ranked, float("inf")), axis=1)
    return tl.where(top_p >= 1.0, kth, cutoff), mass >= bound


@triton.jit
def candidate_threshold(vals_ptr, slots, ok, count, n, t, top_p, row_mass,
                        N: tl.constexpr, BY_RANK: tl.constexpr):
    """(c [R], reached [R]) of each row's first N candidates (N >= count; scratch rows
    ``slots``): top-k then top-p by rank (BY_RANK: an N x N comparison) or by bisection."""
    c = tl.arange(0, N)[None, :]
    vals = tl.load(vals_ptr + slots[:, None] * CMAX + c, mask=c < count[:, None],
                   other=float("-inf"))
    if BY_RANK:                                # ranked copy in the scratch's second half
        ranked = sorted_by_rank(vals, vals_ptr + slots[:, None] * CMAX + CMAX // 2, ok)
        cutoff, reached = sorted_top_p(ranked, n, t, top_p, row_mass)
    else:
        keys = ordered(vals)
        cutoff, reached = top_p_threshold(vals, keys, nth_largest(keys, n, 0), t, top_p,
                                          row_mass)
    return cutoff, reached


@triton.jit
def race_candidates(vals_ptr, cols_ptr, slots, rows, count, cutoff, t, greedy, seed, V,
                    TILE: tl.constexpr):
    """The winning column of each row's candidates >= ``cutoff``, read TILE at a time (one
    compiled race for every candidate count): the first maximal score in candidate order,
    which is ascending by column; a greedy row's lowest column holding its largest
    candidate."""
    best = tl.full(count.shape, float("-inf"), tl.float32)
    won = tl.zeros(count.shape, tl.int32)
    top = tl.full(count.shape, float("-inf"), tl.float32)
    first = tl.zeros(count.shape, tl.int32) + V
    for start in range(0, tl.max(count), TILE):
        c = start + tl.arange(0, TILE)[None, :]
        have = c < count[:, None]
        vals = tl.load(vals_ptr + slots[:, None] * CMAX + c, mask=have, other=float("-inf"))
        cols = tl.load(cols_ptr + slots[:, None] * CMAX + c, mask=have, other=0)
        s = scores(vals, cutoff[:, None], t[:, None], seed, rows[:, None], cols.to(tl.int64),
                   V)
        tile_best = tl.max(s, axis=1)          # strict: an earlier tile keeps its ties
        take = (tile_best > best) | (start == 0)
        won = tl.where(take, first_max_index(s, cols), won)
        best = tl.where(take, tile_best, best)
        tile_top = tl.max(vals, axis=1)
        tile_first = tl.min(tl.where(have & (vals == tile_top[:, None]), cols, V), axis=1)
        first = tl.where(tile_top > top, tile_first,
                         tl.where(tile_top == top, tl.minimum(first, tile_first), first))
        top = tl.maximum(top, tile_top)
    return tl.where(greedy, first, won)


@triton.jit
def selected_groups(groups_ptr, slots, picked, first, GP: tl.constexpr, GB: tl.constexpr):
    """[R, GB] the selected groups first .. first + GB - 1 of each row's list (0 past it)."""
    j = first + tl.arange(0, GB)[None, :]
    return tl.load(groups_ptr + slots[:, None] * GP + j, mask=j < picked[:, None], other=0)


@triton.jit
def group_columns(group, picked, first, V, S: tl.constexpr):
    """(cols, inside) [R, GB, S]: the columns of the groups ``group`` (list positions first
    ..) and whether each is live (a listed group, inside the row)."""
    live = first + tl.arange(0, group.shape[1])[None, :] < picked[:, None]
    cols = group[:, :, None] * S + tl.arange(0, S)[None, None, :]
    return cols, live[:, :, None] & (cols < V)


@triton.jit
def read_entries(logits_ptr, rows64, stride, cols, inside):
    """float32 entries at ``cols`` where ``inside`` (else -inf), NaN and +inf as -inf."""
    return finite_or_masked(tl.load(logits_ptr + rows64[:, None, None] * stride + cols,
                                    mask=inside, other=float("-inf")).to(tl.float32))


@triton.jit
def whole_row_mass(masses_ptrs, maxima, alone, t):
    """float64 [R]: sum exp(z - top) over the row, from its group masses and maxima (``alone``
    marks the groups of top-p-alone rows; 0 elsewhere), top = the row's largest z."""
    z_max = maxima / t[:, None]
    top = tl.max(tl.where(alone, z_max, float("-inf")), axis=1)
    top = tl.where(top > float("-inf"), top, 0.0).to(tl.float64)
    live = alone & (maxima > float("-inf"))
    mass = tl.load(masses_ptrs, mask=live, other=0.0).to(tl.float64)
    scale = tl.exp(tl.minimum(tl.where(live, z_max, 0.0).to(tl.float64) - top[:, None], 0.0))
    return tl.sum(tl.where(live, mass * scale, 0.0), axis=1)


@triton.jit(do_not_specialize=["seed", "row0", "B", "V", "G", "kmax", "nucleus_groups"])
def _select_race(logits_ptr, maxima_ptr, masses_ptr, bad_ptr, temp_ptr, topk_ptr, topp_ptr,
                 groups_ptr, vals_ptr, cols_ptr, ids_ptr, unresolved_ptr, seed, row0, B, V, G,
                 stride, kmax, nucleus_groups, BLOCK_R: tl.constexpr, GP: tl.constexpr,
                 S: tl.constexpr, GB: tl.constexpr, SMALL: tl.constexpr, NMAX: tl.constexpr,
                 RACE: tl.constexpr, PDL: tl.constexpr, PREFETCH: tl.constexpr):
    """Programs: BLOCK_R rows each, from batch row ``row0`` on (module docstring); scratch
    row r - row0 for batch row r; the race reads RACE candidates at a time. An invalid row
    (a group flagged ``bad``: a NaN or +inf; or no finite entry) gets the sentinel id 0
    here. PDL: launched as a programmatic dependent of ``_group_max``, the filters read
    before ``gdc_wait``, the group maxima after it. PREFETCH: each step of the gather reads
    the next step's entries before it compacts its own. Memory traffic: the module's, and the
    group flags (1 B a group)."""
    slots = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rows = row0 + slots
    ok = rows < B
    rows64 = rows.to(tl.int64)
    slots = slots.to(tl.int64)
    t = tl.load(temp_ptr + rows, mask=ok, other=1.0)
    k = tl.load(topk_ptr + rows, mask=ok, other=0)
    top_p = tl.load(topp_ptr + rows, mask=ok, other=1.0)
    if PDL:
        gdc_wait()                             # the group maxima and flags first
    g = tl.arange(0, GP)[None, :]
    in_row = ok[:, None] & (g < G)
    row_maxima = tl.load(maxima_ptr + rows64[:, None] * G + g, mask=in_row, other=float("-inf"))
    bad = tl.load(bad_ptr + rows64[:, None] * G + g, mask=in_row, other=0)
    invalid = ok & ((tl.max(bad.to(tl.int32), axis=1) > 0)
                    | (tl.max(row_maxima, axis=1) == float("-inf")))
    greedy = t == 0.0
    top_k_row = (t > 0.0) & (k > 0) & (k <= kmax) & (k < V) & (k <= G)
    alone = (t > 0.0) & ((k <= 0) | (k >= V)) & (top_p < 1.0)
    active = ok & ~invalid & (greedy | top_k_row | alone)
    n = tl.where(top_k_row, k, tl.where(alone, tl.minimum(nucleus_groups, G), 1))
    maxima = tl.where(active[:, None], row_maxima, float("-inf"))
    safe_t = tl.where(greedy, 1.0, t)
    row_mass = whole_row_mass(masses_ptr + rows64[:, None] * G + g, maxima,
                              active[:, None] & alone[:, None] & (g < G), safe_t)
    tau = value_of(ordered(maxima), maxima, nth_largest(ordered(maxima), n, n // 4 + 1))
    chosen = active[:, None] & (g < G) & (maxima >= tau[:, None])
    tl.store(groups_ptr + slots[:, None] * GP + tl.cumsum(chosen.to(tl.int32), axis=1) - 1, g,
             mask=chosen)
    picked = tl.sum(chosen.to(tl.int32), axis=1)
    tl.debug_barrier()                         # the group list, written above, read below

    count = tl.zeros([BLOCK_R], tl.int32)
    if PREFETCH:                               # the first step's groups, read ahead
        group_next = selected_groups(groups_ptr, slots, picked, 0, GP, GB)
        cols_next, inside_next = group_columns(group_next, picked, 0, V, S)
        x_next = read_entries(logits_ptr, rows64, stride, cols_next, inside_next)
    for start in range(0, tl.max(picked), GB):
        if PREFETCH:                           # this step's entries were read a step ago
            cols, inside = group_columns(group_next, picked, start, V, S)
            x = x_next
            group_next = selected_groups(groups_ptr, slots, picked, start + GB, GP, GB)
            cols_next, inside_next = group_columns(group_next, picked, start + GB, V, S)
            x_next = read_entries(logits_ptr, rows64, stride, cols_next, inside_next)
        else:
            cols, inside = group_columns(selected_groups(groups_ptr, slots, picked, start,
                                                         GP, GB), picked, start, V, S)
            x = read_entries(logits_ptr, rows64, stride, cols, inside)
        hit = (inside & (x >= tau[:, None, None])
               & ((x > float("-inf")) | greedy[:, None, None])).to(tl.int32)
        per_group = tl.sum(hit, axis=2)                      # slots: groups, then columns
        at = (count[:, None, None] + (tl.cumsum(per_group, axis=1) - per_group)[:, :, None]
              + tl.cumsum(hit, axis=2) - 1)
        store = (hit > 0) & (at < CMAX)
        slot = slots[:, None, None] * CMAX + at
        tl.store(vals_ptr + slot, x, mask=store)
        tl.store(cols_ptr + slot, cols, mask=store)
        count += tl.sum(per_group, axis=1)
    tl.debug_barrier()                         # the candidates, written above, read below

    # a row that gathered more than CMAX (an overflow) is left to the fallback: it takes
    # part in neither the thresholds nor the race (held 0), which cost the other rows of
    # its program nothing then; the race never reads past a scratch row's CMAX (an
    # overflow's would read the next row's, the last row's past the buffer's end)
    held = tl.where(count <= CMAX, count, 0)
    n = tl.where(alone, held, n)              # top-p alone: every candidate is kept by top-k
    if tl.max(held) <= SMALL:                  # the usual case: k + a few candidates
        cutoff, reached = candidate_threshold(vals_ptr, slots, ok, held, n, safe_t, top_p,
                                              row_mass, SMALL, True)
    else:
        cutoff, reached = candidate_threshold(vals_ptr, slots, ok, held, n, safe_t, top_p,
                                              row_mass, NMAX, False)
    won = race_candidates(vals_ptr, cols_ptr, slots, rows, held, cutoff, safe_t, greedy, seed,
                          V, RACE)
    resolved = invalid | (active & (held > 0) & (reached | greedy))
    tl.store(ids_ptr + rows, tl.where(invalid, 0, won.to(tl.int64)), mask=resolved)
    tl.store(unresolved_ptr + rows, (~resolved).to(tl.int8), mask=ok)


def select_race(logits, maxima, masses, bad, width, temperature, top_k, top_p, kmax, seed,
                block_r, warps, ids, unresolved, race_tile: int | None = None, *,
                small: int = GPU_SMALL, tile: int = TILE, pdl: bool = False,
                prefetch: bool = False) -> None:
    """Write the ids of the greedy, top-k and top-p-alone rows into ``ids`` (int64 [B]), id
    0 at invalid rows (``bad`` groups, or no finite entry), and flag the rest in
    ``unresolved`` (int8 [B]: no filter, k > ``kmax``, wide top-p sets, more than CMAX
    candidates), whose ids are left unwritten. A launch takes at most as many rows as
    SCRATCH_BYTES of scratch hold (a check's batch of 2^28 entries in rows of 100 would
    need 24 GiB), the launches in turn on one scratch, held per (device, stream) between
    calls; the noise is keyed by the batch row either way. ``race_tile``: the candidates the
    race reads at a time (None: SMALL on a GPU, one compiled race for every count; on a CPU
    CPU_RACE, or NMAX where that is less). ``small``, ``tile``: launch
    settings (``tiers``); ``pdl``: a programmatic dependent launch of ``_group_max`` (which
    then calls ``gdc_launch_dependents``); ``prefetch``: the gather reads a step ahead."""
    batch, vocab = logits.shape
    count = cdiv(vocab, width)
    device = logits.device
    small, gp, gb, nmax = tiers(vocab, count, width, device, block_r, small, tile)
    race_tile = race_tile or (small if device.type == "cuda" else min(CPU_RACE, nmax))
    per_launch = scratch_rows(block_r, batch)
    _, vals, cols, groups = split_scratch("triton-sample-logits", device, 0,
                                          per_launch * CMAX.value,
                                          (torch.float32, torch.int32, torch.int32))
    for row0 in range(0, batch, per_launch):
        _select_race[(cdiv(min(per_launch, batch - row0), block_r),)](
            logits, maxima, masses, bad, temperature, top_k, top_p, groups, vals, cols, ids,
            unresolved, seed, row0, batch, vocab, count, logits.stride(0), kmax,
            NUCLEUS_GROUPS, BLOCK_R=block_r, GP=gp, S=width,
            GB=gb, SMALL=small, NMAX=nmax, RACE=race_tile, PDL=pdl, PREFETCH=prefetch,
            num_warps=warps, **({"launch_pdl": True} if pdl else {}))


def tiers(vocab: int, groups: int, width: int, device: torch.device, block_r: int,
          small: int = GPU_SMALL, tile: int = TILE) -> tuple[int, ...]:
    """(SMALL, GP, GB, NMAX) of ``_select_race``: the most candidates ranked by an N x N
    comparison (``small`` with one row a program, as on a GPU), the group count and the
    groups read per step (``tile`` entries on a GPU) as powers of two, and the width of the
    bisection's tensors (a row never holds more than V candidates). On a GPU, GP = GROUPS
    (or 2 GROUPS, where a row has more groups) and NMAX = CMAX whatever V: every vocabulary
    up to GROUPS columns (S = 1) shares one compiled kernel, and larger ones one or two per S
    (Triton compiles each for seconds); on a CPU, where the interpreter pays per entry, the
    tightest powers of two."""
    cuda = device.type == "cuda"
    gp = max(GROUPS, next_power_of_2(groups)) if cuda else next_power_of_2(groups)
    gb = max(1, min(gp, (tile if cuda else CPU_TILE) // width))
    nmax = CMAX.value if cuda else min(CMAX.value, next_power_of_2(vocab))
    return (small if block_r == 1 else CPU_SMALL), gp, gb, nmax


def cpu_rows(batch: int, vocab: int, groups: int, width: int) -> int:
    """Rows a CPU program of ``_select_race`` holds: as many as keep its widest tensor
    within CPU_NUMEL entries (the interpreter pays per program and per reduction, little
    per entry)."""
    small, gp, gb, nmax = tiers(vocab, groups, width, torch.device("cpu"), 2)
    widest = max(small * small, gp, gb * width, nmax)
    return max(1, min(next_power_of_2(batch), CPU_NUMEL // widest))


def scratch_rows(block_r: int, batch: int) -> int:
    """Rows a launch of the select takes: a multiple of ``block_r`` whose scratch (candidate
    values and columns, and the group list, one held buffer each of CMAX entries a row:
    12 CMAX bytes) fits SCRATCH_BYTES."""
    rows = max(1, SCRATCH_BYTES // (12 * CMAX.value)) // block_r * block_r
    return min(max(rows, block_r), batch)
