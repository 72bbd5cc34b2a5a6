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
  power of two leaving at most MOST_GROUPS groups) and, in rows with top-p alone, the
  group's mass;
* ``_select_race`` (kernels/sample_logits/triton_top_k_select.py), one program per row,
  gathers the candidates >= the k-th largest group max, which hold the whole top-k set with
  its ties, runs top-p on them in float64 and races them; a greedy row's candidates are the
  entries equal to its max, the first one wins. A row with top-p alone takes the
  candidates of its NUCLEUS_GROUPS largest group maxima, and is resolved when their mass
  reaches top_p times the row's (summed from the group masses). An invalid row (a NaN or
  +inf, flagged by ``_group_max``, or nothing finite) gets the sentinel id 0 here;
* ``_fallback_race`` (kernels/sample_logits/triton_row_fallback.py) takes the rows left
  flagged (no filter, k > KMAX, a top-p set the candidates do not hold, more candidates
  than the scratch holds): their thresholds by bisection over the whole row, then the race.
  It runs over every row; programs of unflagged rows return at once.

CPU and GPU run these three kernels alike; only the launch settings differ by device type (on
a CPU, the Triton interpreter, which pays per program and per reduction: few programs with
large tiles; on a GPU, one row a program and splits over the SMs).

An eager call is host-bound: the device waits for the first launch, so nothing but a held
buffers' lookup precedes ``_group_max``, and no torch op follows the last launch. The group
buffers and the select's scratch are held per (device, stream) for engine-sized batches.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents

from sampling_harness.kernels.meta import per_request_seeds
from sampling_harness.kernels.sample_logits import triton_row_fallback as fallback
from sampling_harness.kernels.sample_logits import triton_top_k_select as select
from sampling_harness.kernels.sample_logits.race_noise import finite_or_masked
from sampling_harness.kernels.sample_logits.triton_row_fallback import fallback_race
from sampling_harness.kernels.sample_logits.triton_top_k_select import CMAX, MOST_GROUPS
from sampling_harness.kernels.split_scratch import (
    cdiv,
    dependent_launch,
    next_power_of_2,
    split_scratch,
)
from sampling_harness.kernels.triton_seeds import seed_argument

KMAX = 1024
CPU_TILE = 2**20                  # entries a program of _group_max holds on a CPU (Triton's
# largest tensor: the interpreter pays per program, little per entry)
# sample_logits_triton's keyword launch settings default to these and to those of the
# select and the fallback (bound at import: patching them changes nothing)
GPU_GROUP_BLOCK = 4096           # _group_max: the columns of a program's group maxima
GPU_WARPS = 4                    # _group_max's warps
GPU_SELECT_WARPS = 4             # _select_race's warps
HELD_GROUP_ENTRIES = 1 << 20     # group buffers held between calls up to this many entries
NEG_INF = float("-inf")


@triton.jit(do_not_specialize=["B", "V", "G"])
def _group_max(logits_ptr, temp_ptr, topk_ptr, topp_ptr, max_ptr, mass_ptr, bad_ptr, B, V,
               stride, G, BLOCK_R: tl.constexpr, BLOCK_G: tl.constexpr, S: tl.constexpr,
               PDL: tl.constexpr):
    """Programs (row block, group block): the max m of each group of S columns (-inf past V;
    NaN and +inf read as -inf, and flagged in ``bad``) and, for rows with top-p alone, the
    group's mass sum exp(z - m / T) over its finite entries, z = x / T in float32 (its terms
    in (0, 1], the largest 1). With PDL the select (a programmatic dependent) may launch
    once every program has started; it waits for this grid's end before its first read.
    Memory traffic: the logits read once (2 or 4 B per entry); 5 or 9 B per group written."""
    if PDL:
        gdc_launch_dependents()
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


def group_width(vocab: int, groups: int = MOST_GROUPS) -> int:
    """S: the narrowest power of two that leaves at most ``groups`` groups in a row of V
    (narrow groups: fewer columns gathered by the select; few groups: a shorter search
    among their maxima; V = 151936 takes S = 128 and 1187 groups, 128256 S = 128 and 1002,
    32000 S = 32 and 1000)."""
    return next_power_of_2(cdiv(vocab, groups))


def group_maxima(logits, temperature, top_k, top_p, *, group_block: int = GPU_GROUP_BLOCK,
                 warps: int = GPU_WARPS, pdl: bool = False, groups: int = MOST_GROUPS
                 ) -> tuple[torch.Tensor, ...]:
    """(maxima, masses, bad, unresolved) of ``_group_max``, flat: float32 maxima and masses
    (B G entries; masses unwritten in rows without top-p alone), int8 flags of groups
    holding a NaN or +inf, and int8 room for B unresolved flags (``group_buffers``). The
    wrapper's first launch: nothing before it but the buffers' lookup. On a GPU a program
    takes ``group_block`` columns with ``warps`` warps; ``pdl``: the select that follows is
    a programmatic dependent launch; ``groups``: the groups a row has at most."""
    batch, vocab = logits.shape
    width = group_width(vocab, groups)
    count = cdiv(vocab, width)
    buffers = group_buffers(batch * count, logits.device)
    if logits.device.type != "cuda":
        block_g = min(next_power_of_2(count), max(1, CPU_TILE // width))
        block_r = max(1, min(next_power_of_2(batch), CPU_TILE // (block_g * width)))
    else:
        block_r, block_g = 1, max(1, group_block // width)
    _group_max[(cdiv(batch, block_r), cdiv(count, block_g))](
        logits, temperature, top_k, top_p, *buffers[:3], batch, vocab, logits.stride(0),
        count, BLOCK_R=block_r, BLOCK_G=block_g, S=width, PDL=pdl, num_warps=warps)
    return buffers


def group_buffers(entries: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    """Flat (maxima float32, masses float32, bad int8, unresolved int8) of at least
    ``entries`` = B G entries (unresolved: B): held per device and stream up to
    HELD_GROUP_ENTRIES (an engine's batch: no allocation, about 3 us of host time each),
    allocated afresh above (a check's batch of many short rows would hold 9 B per logit)."""
    dtypes = (torch.float32, torch.float32, torch.int8, torch.int8)
    if entries <= HELD_GROUP_ENTRIES:
        return split_scratch("triton-sample-logits-groups", device, 0, entries, dtypes)[1:]
    return tuple(torch.empty(entries, dtype=dtype, device=device) for dtype in dtypes)


def select_rows(batch: int, vocab: int, device: torch.device, warps: int,
                groups: int = MOST_GROUPS) -> tuple[int, int]:
    """(BLOCK_R, warps) of ``_select_race``: one row per program and ``warps`` on a GPU; on
    a CPU (the interpreter pays per program and per reduction) as many as its tensors
    allow."""
    if device.type != "cuda":
        width = group_width(vocab, groups)
        return select.cpu_rows(batch, vocab, cdiv(vocab, width), width), 4
    return 1, warps


def contiguous_as(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` itself when it is contiguous ``dtype`` (no torch dispatch), else a copy."""
    return x if x.dtype == dtype and x.is_contiguous() else x.to(dtype).contiguous()


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
                         top_p: torch.Tensor, seed, min_p: torch.Tensor | None = None, *,
                         group_block: int = GPU_GROUP_BLOCK, warps: int = GPU_WARPS,
                         select_warps: int = GPU_SELECT_WARPS, select_pdl: bool = True,
                         select_prefetch: bool = True, groups: int = MOST_GROUPS,
                         select_tile: int = select.TILE, select_small: int = select.GPU_SMALL,
                         fallback_block: int = fallback.GPU_BLOCK,
                         fallback_search: int = fallback.GPU_SEARCH,
                         fallback_warps: int = fallback.GPU_WARPS,
                         fallback_programs_per_sm: int = fallback.GPU_PROGRAMS_PER_SM,
                         fallback_unroll: int = fallback.GPU_UNROLL,
                         fallback_regs: int = fallback.GPU_REGS) -> torch.Tensor:
    """Family ``sample-logits``: one token id per row, as int64 [B] (paths: module doc).
    ``seed``: an int, or int64 [B] per-request seeds (kernels/triton_seeds.py).
    Launch settings (keywords, ``bench --launch``), on a GPU (the interpreter takes its own
    tiles): ``group_block`` columns a program of ``_group_max`` and its ``warps``,
    ``_select_race``'s ``select_warps``, whether it is a programmatic dependent launch of
    ``_group_max`` (``select_pdl``, on GPUs that take it), the ``groups`` a row has at
    most (up to 2048; ``group_width``), whether the select's gather reads a step
    ahead (``select_prefetch``), its ``select_tile`` entries a step
    and ``select_small`` candidates ranked by comparison (also in a CPU's one-row programs),
    the fallback's race tile
    ``fallback_block``, search tile ``fallback_search``, search tiles read at once
    ``fallback_unroll`` (1, 4 or 8), ``fallback_warps``, ``fallback_programs_per_sm`` and
    ``fallback_regs`` (a GPU's registers a thread at most; 0: the compiler's)."""
    if logits.dim() != 2 or logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"logits must be float32, bfloat16 or float16 [B, V], got "
                         f"{logits.dtype} {tuple(logits.shape)}")
    batch, vocab = logits.shape
    if not 1 <= groups <= CMAX.value:
        raise ValueError(f"groups must be in [1, {CMAX.value}], got {groups}")
    seed = seed_argument(seed, batch, logits.device)
    if batch == 0:
        return torch.empty(0, dtype=torch.int64, device=logits.device)
    logits = logits.contiguous()
    t = contiguous_as(temperature, torch.float32)
    k, p = contiguous_as(top_k, torch.int64), contiguous_as(top_p, torch.float32)
    if min_p is not None:
        k = fold_min_p(logits, t, k, min_p.to(logits.device))
    pdl = select_pdl and dependent_launch(logits.device)
    maxima, masses, bad, unresolved = group_maxima(logits, t, k, p, group_block=group_block,
                                                   warps=warps, pdl=pdl, groups=groups)
    ids = torch.empty(batch, dtype=torch.int64, device=logits.device)
    unresolved = unresolved[:batch]
    block_r, select_warps = select_rows(batch, vocab, logits.device, select_warps, groups)
    select.select_race(logits, maxima, masses, bad, group_width(vocab, groups), t, k, p, KMAX,
                       seed, block_r, select_warps, ids, unresolved, small=select_small,
                       tile=select_tile, pdl=pdl, prefetch=select_prefetch)
    fallback_race(logits, t, k, p, unresolved, ids, seed, block=fallback_block,
                  search=fallback_search, warps=fallback_warps,
                  programs_per_sm=fallback_programs_per_sm, unroll=fallback_unroll,
                  regs=fallback_regs)
    return ids
