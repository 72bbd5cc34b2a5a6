"""triton-sample-logits: temperature, min-p, top-k and top-p with no full sort, then an exact
race.

min-p keeps an upper set {z - max z >= log(min_p)} of the row holding its max, so on the
row it is a top-k: k_min = the count of entries it keeps (ties included). Min-p then top-k
is top-k at min(k, k_min) (both keep prefixes of the descending order), and top-p then runs
on that set as it would after min-p: ``fold_min_p`` rewrites k before the launches below
(torch ops on the device, no synchronisation; one more read of the rows, where some row has
min-p).

Top-k and top-p each keep a set {x >= c} of the row (ties with the boundary kept), so one
threshold c per row describes the processed row; the draw is then an exponential race over
the kept tokens in log space: token = argmax_{x_j >= c} (x_j / T - log q_j), q_j ~ Exp(1)
(Gumbel-max with exact exponentials keyed by (row, column): kernels/sample_logits/race_noise.py;
no row max, no softmax in memory). Per-request seeds (an int64 [B] ``seed``): row r's noise
is keyed by its own seed alone, one 8-byte seed load per row and use (kernels/triton_seeds.py).

Three launches serve every row, with no host synchronisation (capturable in a CUDA graph):

* ``_group_max`` reads the row once and keeps the max of each group of S columns (S a
  power of two, about V / GROUPS) and, in rows with top-p alone, the group's mass;
* ``_select_race`` (kernels/sample_logits/triton_top_k_select.py), one program per row,
  gathers the candidates >= the k-th largest group max, which hold the whole top-k set with
  its ties, runs top-p on them in float64 and races them; a greedy row's candidates are the
  entries equal to its max, the first one wins. A row with top-p alone takes the
  candidates of its NUCLEUS_GROUPS largest group maxima, and is resolved when their mass
  reaches top_p times the row's (summed from the group masses);
* ``_fallback_race`` (kernels/sample_logits/triton_row_fallback.py) takes the rows left
  flagged (no filter, k > KMAX, a top-p set the candidates do not hold, more candidates
  than the scratch holds): their thresholds by bisection over the whole row, then the race.
  It runs over every row; programs of unflagged rows return at once.

In the interpreter a batch over HOST_PATH_ROWS rows takes the host path instead (one
synchronisation; in chunks of at most HOST_CHUNK_BYTES of float32 logits): top-p alone from
the TOP_P_CANDIDATES largest under a full-row logsumexp, no filter with c = -inf, and the
rest (k > KMAX, a top-p set larger than TOP_P_CANDIDATES tokens) the sort-based threshold of
torch-logprobs; then ``_row_race`` over their whole rows.
"""

import os

import torch
import triton
import triton.language as tl

from kernels.logprobs.torch_logprobs import kept_entries
from kernels.meta import per_request_seeds
from kernels.sample_logits.race_noise import finite_or_masked
from kernels.sample_logits.triton_row_fallback import fallback_race, race_columns
from kernels.sample_logits.triton_top_k_select import select_race
from kernels.split_scratch import multiprocessors
from kernels.triton_seeds import seed_argument

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
KMAX, TOP_P_CANDIDATES, GROUPS = 1024, 256, 1024
CPU_TILE = 2**18                       # elements per program in the interpreter
GPU_BLOCK, GPU_WARPS, GPU_PROGRAMS_PER_SM = 2048, 4, 4
GPU_GROUP_BLOCK, GPU_GROUP_WARPS = 8192, 4        # _group_max: columns and warps a program
GPU_SELECT_WARPS = 4                               # _select_race
HOST_CHUNK_BYTES = 1 << 30       # the host path's float32 copies, at most this much at a time
HOST_PATH_ROWS = 256 if INTERPRET else None   # batches over this many rows take the host
# path: in the interpreter the statistical checks' batches (its per-op cost would make them
# last an hour), the unit tests' stay on the device path; None: never (a GPU)
NEG_INF = float("-inf")


@triton.jit(do_not_specialize=["seed"])
def _row_race(logits_ptr, rows_ptr, cutoff_ptr, temp_ptr, best_ptr, col_ptr, seed, R, V,
              stride, per_split, BLOCK_R: tl.constexpr, BLOCK: tl.constexpr):
    """Programs (row block, split): the best score and its column over the split's columns
    (``race_columns``, with the host's thresholds). Memory traffic: the logits read once
    (2 or 4 B per entry); 12 B per (row, split) written."""
    i = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    ok = i < R
    rows = tl.load(rows_ptr + i, mask=ok, other=0).to(tl.int64)
    cutoff = tl.load(cutoff_ptr + i, mask=ok, other=float("inf"))
    t = tl.load(temp_ptr + i, mask=ok, other=1.0)
    first = tl.program_id(1) * per_split
    never_greedy = tl.zeros([BLOCK_R], tl.int1)         # the host path races sampled rows
    best, best_col = race_columns(logits_ptr, rows, ok, stride, V, cutoff, t, never_greedy,
                                  seed, first, tl.minimum(first + per_split, V), BLOCK)
    out = tl.program_id(1) * R + i
    tl.store(best_ptr + out, best, mask=ok)
    tl.store(col_ptr + out, best_col, mask=ok)


@triton.jit
def _group_max(logits_ptr, temp_ptr, topk_ptr, topp_ptr, max_ptr, mass_ptr, bad_ptr, B, V,
               stride, G, BLOCK_R: tl.constexpr, BLOCK_G: tl.constexpr, S: tl.constexpr):
    """Programs (row block, group block): the max m of each group of S columns (-inf past V;
    NaN and +inf read as -inf, and flagged in ``bad``) and, for rows with top-p alone, the
    group's mass sum exp(z - m / T) over its finite entries, z = x / T in float32 (its terms
    in (0, 1], the largest 1).
    Memory traffic: the logits read once (2 or 4 B per entry); 5 or 9 B per group written."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    groups = tl.program_id(1) * BLOCK_G + tl.arange(0, BLOCK_G)
    cols = groups[None, :, None] * S + tl.arange(0, S)[None, None, :]
    ok = (rows < B)[:, None, None] & (cols < V)
    raw = tl.load(logits_ptr + rows.to(tl.int64)[:, None, None] * stride + cols, mask=ok,
                  other=float("-inf")).to(tl.float32)
    x = finite_or_masked(raw)
    out = rows.to(tl.int64)[:, None] * G + groups[None, :]
    written = (rows < B)[:, None] & (groups < G)[None, :]
    m = tl.max(x, axis=2)
    tl.store(max_ptr + out, m, mask=written)
    bad = tl.max(((raw != raw) | (raw == float("inf"))).to(tl.int32), axis=2)
    tl.store(bad_ptr + out, bad.to(tl.int8), mask=written)
    t = tl.load(temp_ptr + rows, mask=rows < B, other=0.0)
    k = tl.load(topk_ptr + rows, mask=rows < B, other=0)
    p = tl.load(topp_ptr + rows, mask=rows < B, other=1.0)
    alone = (rows < B) & (t > 0.0) & ((k <= 0) | (k >= V)) & (p < 1.0)
    if tl.max(alone.to(tl.int32)) > 0:
        safe_t = tl.where(alone, t, 1.0)[:, None, None]
        finite = x > float("-inf")
        z_max = tl.where(m > float("-inf"), m, 0.0)[:, :, None] / safe_t
        terms = tl.exp(tl.minimum(tl.where(finite, x, 0.0) / safe_t - z_max, 0.0))
        tl.store(mass_ptr + out, tl.sum(tl.where(finite, terms, 0.0), axis=2),
                 mask=written & alone[:, None])


def top_p_cutoff(vals: torch.Tensor, keep: torch.Tensor, temperature: torch.Tensor,
                 top_p: torch.Tensor, total: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(c, reached) over candidates ``vals`` [R, C] sorted descending, the first the row's
    largest kept value; ``keep`` marks the candidates top-p runs on, ``total`` [R] float64
    the mass of that whole set relative to the first. c = the value of the last candidate
    whose exclusive cumulative probability is < top_p (the first always kept), in float64
    from the float32 quotients x / T; reached: the candidates' mass reaches top_p, so no
    token outside them is kept."""
    z = (vals / temperature[:, None]).to(torch.float64)
    w = torch.where(keep, torch.exp(z - z[:, :1]), 0.0)
    before = torch.cumsum(w, dim=1) - w
    bound = top_p.to(torch.float64)[:, None] * total[:, None]
    first = torch.arange(vals.shape[1], device=vals.device)[None, :] == 0
    inside = keep & ((before < bound) | first)
    cutoff = torch.where(inside, vals, float("inf")).amin(dim=1)
    return cutoff, w.sum(dim=1) >= bound[:, 0]


def _launch(rows: int, vocab: int, device: torch.device):
    """(BLOCK_R, BLOCK, splits): the interpreter gets few programs with large tiles."""
    if INTERPRET or device.type != "cuda":
        block = min(4096, triton.next_power_of_2(vocab))
        return max(1, min(triton.next_power_of_2(rows), CPU_TILE // block)), block, 1
    sms = multiprocessors(device)
    splits = max(1, min(triton.cdiv(vocab, GPU_BLOCK), GPU_PROGRAMS_PER_SM * sms // rows))
    return 1, GPU_BLOCK, splits


def row_race(logits, rows, cutoff, temperature, seed) -> torch.Tensor:
    """int64 winners of ``_row_race`` for the batch rows ``rows`` (int64 [R])."""
    count, vocab = rows.numel(), logits.shape[1]
    block_r, block, splits = _launch(count, vocab, logits.device)
    per_split = triton.cdiv(triton.cdiv(vocab, splits), block) * block
    splits = triton.cdiv(vocab, per_split)
    best = torch.empty((splits, count), dtype=torch.float32, device=logits.device)
    cols = torch.empty((splits, count), dtype=torch.int64, device=logits.device)
    _row_race[(triton.cdiv(count, block_r), splits)](
        logits, rows, cutoff, temperature, best, cols, seed, count, vocab, logits.stride(0),
        per_split, BLOCK_R=block_r, BLOCK=block, num_warps=GPU_WARPS)
    return cols.gather(0, best.argmax(dim=0, keepdim=True))[0]


def group_width(vocab: int) -> int:
    """S: a power of two near V / GROUPS."""
    return triton.next_power_of_2(triton.cdiv(vocab, GROUPS))


def group_maxima(logits, temperature, top_k, top_p
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(maxima, masses, bad) [B, G] of ``_group_max``: float32 maxima and masses (unwritten
    in rows without top-p alone), int8 flags of groups holding a NaN or +inf."""
    batch, vocab = logits.shape
    width = group_width(vocab)
    count = triton.cdiv(vocab, width)
    maxima = torch.empty((batch, count), dtype=torch.float32, device=logits.device)
    masses = torch.empty_like(maxima)
    bad = torch.empty((batch, count), dtype=torch.int8, device=logits.device)
    warps = 4
    if INTERPRET or logits.device.type != "cuda":
        block_g = min(triton.next_power_of_2(count), max(1, CPU_TILE // width))
        block_r = max(1, min(triton.next_power_of_2(batch), CPU_TILE // (block_g * width)))
    else:
        block_r, block_g = 1, max(1, GPU_GROUP_BLOCK // width)
        warps = GPU_GROUP_WARPS
    _group_max[(triton.cdiv(batch, block_r), triton.cdiv(count, block_g))](
        logits, temperature, top_k, top_p, maxima, masses, bad, batch, vocab, logits.stride(0),
        count, BLOCK_R=block_r, BLOCK_G=block_g, S=width, num_warps=warps)
    return maxima, masses, bad


def select_rows(batch: int, device: torch.device) -> tuple[int, int]:
    """(BLOCK_R, warps) of ``_select_race``: one row per program on a GPU; in the
    interpreter (which pays per program) as many rows as CPU_TILE holds."""
    if INTERPRET or device.type != "cuda":
        return max(1, min(triton.next_power_of_2(batch), CPU_TILE // 1024)), 4
    return 1, GPU_SELECT_WARPS


def top_p_thresholds(x: torch.Tensor, top_p: torch.Tensor, temperature: torch.Tensor):
    """For rows ``x`` [R, V] with top-p alone: (c [R], reached [R]) from the
    TOP_P_CANDIDATES largest, normalised by a full-row sum of exp(z - max z) in float64."""
    vals, _ = torch.topk(x, min(x.shape[1], TOP_P_CANDIDATES), dim=1)
    z = x / temperature[:, None]
    top = vals[:, :1] / temperature[:, None]
    total = torch.exp((z - top).to(torch.float64)).sum(dim=1)
    return top_p_cutoff(vals, vals > NEG_INF, temperature, top_p, total)


def sorted_thresholds(x, temperature, top_k, top_p) -> torch.Tensor:
    """The fallback for rows ``x`` [R, V]: torch-logprobs' sort-based kept set, as c."""
    _, keep = kept_entries(x, temperature, top_k, top_p)
    return torch.where(keep, x, float("inf")).amin(dim=1)


def row_cutoffs(x, t, k, p) -> torch.Tensor:
    """c for rows ``x`` [R, V] the full-row race takes: -inf with no filter, the
    candidates' top-p threshold, or the sort-based fallback."""
    vocab = x.shape[1]
    cutoff = torch.full((x.shape[0],), NEG_INF, device=x.device)
    unresolved = (k > 0) & (k < vocab)
    alone = (~unresolved & (p < 1)).nonzero()[:, 0]
    if alone.numel():
        c, reached = top_p_thresholds(x[alone], p[alone], t[alone])
        cutoff[alone] = c
        unresolved[alone[~reached]] = True
    slow = unresolved.nonzero()[:, 0]
    if slow.numel():
        cutoff[slow] = sorted_thresholds(x[slow], t[slow], k[slow], p[slow])
    return cutoff.contiguous()


def fold_min_p(logits: torch.Tensor, t: torch.Tensor, k: torch.Tensor, min_p: torch.Tensor
               ) -> torch.Tensor:
    """int64 [B]: top-k folded with min-p (module doc). k_min counts z - max z >= log(min_p)
    with z = x / T in float32 (monotone in x, so the set is {x >= x_(k_min)} with its ties);
    rows with min_p 0 or T 0 keep their k. Memory traffic: the rows read once, a float32
    [B, V] temporary."""
    vocab = logits.shape[1]
    x = logits.to(torch.float32)
    z = x / torch.where(t > 0, t, 1.0)[:, None]
    bound = torch.log(min_p.to(torch.float32))[:, None]
    k_min = ((z - z.amax(dim=1, keepdim=True) >= bound) & (x > NEG_INF)).sum(dim=1)
    enabled = (k > 0) & (k < vocab)
    folded = torch.where(enabled, torch.minimum(k, k_min), k_min)
    return torch.where((min_p > 0) & (t > 0), folded, k).contiguous()


@per_request_seeds
def sample_logits_triton(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
                         top_p: torch.Tensor, seed, min_p: torch.Tensor | None = None
                         ) -> torch.Tensor:
    """Family ``sample-logits``: one token id per row, as int64 [B] (paths: module doc).
    ``seed``: an int, or int64 [B] per-request seeds (kernels/triton_seeds.py)."""
    if logits.dim() != 2 or logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"logits must be float32, bfloat16 or float16 [B, V], got "
                         f"{logits.dtype} {tuple(logits.shape)}")
    batch, vocab = logits.shape
    seed = seed_argument(seed, batch, logits.device)
    if batch == 0:
        return torch.empty(0, dtype=torch.int64, device=logits.device)
    logits = logits.contiguous()
    t = temperature.to(torch.float32).contiguous()
    k, p = top_k.to(torch.int64).contiguous(), top_p.to(torch.float32).contiguous()
    if min_p is not None:
        k = fold_min_p(logits, t, k, min_p.to(logits.device))
    if HOST_PATH_ROWS is not None and batch > HOST_PATH_ROWS:    # one synchronisation
        ids = logits.new_empty(batch, dtype=torch.int64)
        host_rows(logits, ids, torch.arange(batch, device=logits.device), t, k, p, seed)
        return invalid_to_sentinel(logits, ids)
    block_r, warps = select_rows(batch, logits.device)
    maxima, masses, bad = group_maxima(logits, t, k, p)
    ids, unresolved = select_race(logits, maxima, masses, group_width(vocab), t, k, p, KMAX,
                                  seed, block_r, warps)
    fallback_race(logits, t, k, p, unresolved, ids, seed, INTERPRET)
    invalid = bad.amax(dim=1).bool() | (maxima.amax(dim=1) == NEG_INF)
    return torch.where(invalid, 0, ids)


def invalid_to_sentinel(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """ids, with the contract's sentinel 0 where the row holds a NaN or +inf or nothing
    finite (its max is not finite; torch's max propagates NaN): the host path's test (the
    device path reads the same from ``_group_max``'s flags and maxima). Every launch works
    row by row, so such a row's garbage stays in its own id. Memory traffic: the rows read
    once more."""
    return torch.where(torch.isfinite(logits.amax(dim=1)), ids, 0)


def host_rows(logits, ids, rows, t, k, p, seed) -> None:
    """The host path for the batch rows ``rows``, written into ``ids``: greedy rows by torch's
    argmax, the others by ``row_cutoffs`` and ``_row_race``; in chunks of HOST_CHUNK_BYTES of
    float32 logits (a statistical check's whole batch may come here)."""
    step = max(1, HOST_CHUNK_BYTES // (4 * logits.shape[1]))
    for chunk in rows.split(step):
        x = logits[chunk].to(torch.float32)
        ids[chunk] = x.argmax(dim=1)
        sampled = (t[chunk] > 0).nonzero()[:, 0]
        if sampled.numel():
            at = chunk[sampled]
            cutoff = row_cutoffs(x[sampled], t[at], k[at], p[at])
            ids[at] = row_race(logits, at, cutoff, t[at].contiguous(), seed)
