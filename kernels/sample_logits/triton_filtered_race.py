"""triton-sample-logits: temperature, top-k and top-p with no full sort, then an exact race.

Top-k and top-p each keep a set {x >= c} of the row (ties with the boundary kept), so one
threshold c per row describes the processed row; the draw is then an exponential race over
the kept tokens in log space: token = argmax_{x_j >= c} (x_j / T - log q_j), q_j ~ Exp(1)
(Gumbel-max with exact exponentials keyed by (row, column): kernels/sample_logits/race_noise.py;
no row max, no softmax in memory).

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

CPU and GPU run these three kernels alike; only the launch settings differ by device type (on
a CPU, the Triton interpreter, which pays per program and per reduction: few programs with
large tiles; on a GPU, one row a program and splits over the SMs).
"""

import torch
import triton
import triton.language as tl

from kernels.sample_logits.triton_row_fallback import fallback_race
from kernels.sample_logits.triton_top_k_select import cpu_rows, select_race

KMAX, GROUPS = 1024, 1024
CPU_TILE = 2**20                  # entries a program of _group_max holds on a CPU (Triton's
# largest tensor: the interpreter pays per program, little per entry)
GPU_GROUP_BLOCK, GPU_GROUP_WARPS = 8192, 4        # _group_max: columns and warps a program
GPU_SELECT_WARPS = 4                               # _select_race


@triton.jit
def _group_max(logits_ptr, temp_ptr, topk_ptr, topp_ptr, max_ptr, mass_ptr, B, V, stride, G,
               BLOCK_R: tl.constexpr, BLOCK_G: tl.constexpr, S: tl.constexpr):
    """Programs (row block, group block): the max m of each group of S columns (-inf past V)
    and, for rows with top-p alone, the group's mass sum exp(z - m / T) over its finite
    entries, z = x / T in float32 (its terms in (0, 1], the largest 1).
    Memory traffic: the logits read once (2 or 4 B per entry); 4 or 8 B per group written."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    groups = tl.program_id(1) * BLOCK_G + tl.arange(0, BLOCK_G)
    cols = groups[None, :, None] * S + tl.arange(0, S)[None, None, :]
    ok = (rows < B)[:, None, None] & (cols < V)
    x = tl.load(logits_ptr + rows.to(tl.int64)[:, None, None] * stride + cols, mask=ok,
                other=float("-inf")).to(tl.float32)
    out = rows.to(tl.int64)[:, None] * G + groups[None, :]
    written = (rows < B)[:, None] & (groups < G)[None, :]
    m = tl.max(x, axis=2)
    tl.store(max_ptr + out, m, mask=written)
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


def group_width(vocab: int) -> int:
    """S: a power of two near V / GROUPS."""
    return triton.next_power_of_2(triton.cdiv(vocab, GROUPS))


def group_maxima(logits, temperature, top_k, top_p) -> tuple[torch.Tensor, torch.Tensor]:
    """(maxima, masses) float32 [B, G] of ``_group_max`` (masses unwritten in rows without
    top-p alone)."""
    batch, vocab = logits.shape
    width = group_width(vocab)
    count = triton.cdiv(vocab, width)
    maxima = torch.empty((batch, count), dtype=torch.float32, device=logits.device)
    masses = torch.empty_like(maxima)
    warps = 4
    if logits.device.type != "cuda":
        block_g = min(triton.next_power_of_2(count), max(1, CPU_TILE // width))
        block_r = max(1, min(triton.next_power_of_2(batch), CPU_TILE // (block_g * width)))
    else:
        block_r, block_g = 1, max(1, GPU_GROUP_BLOCK // width)
        warps = GPU_GROUP_WARPS
    _group_max[(triton.cdiv(batch, block_r), triton.cdiv(count, block_g))](
        logits, temperature, top_k, top_p, maxima, masses, batch, vocab, logits.stride(0),
        count, BLOCK_R=block_r, BLOCK_G=block_g, S=width, num_warps=warps)
    return maxima, masses


def select_rows(batch: int, vocab: int, device: torch.device) -> tuple[int, int]:
    """(BLOCK_R, warps) of ``_select_race``: one row per program on a GPU; on a CPU (the
    interpreter pays per program and per reduction) as many as its tensors allow."""
    if device.type != "cuda":
        width = group_width(vocab)
        return cpu_rows(batch, vocab, triton.cdiv(vocab, width), width), 4
    return 1, GPU_SELECT_WARPS


def sample_logits_triton(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
                         top_p: torch.Tensor, seed: int) -> torch.Tensor:
    """Family ``sample-logits``: one token id per row, as int64 [B] (paths: module doc)."""
    if logits.dim() != 2 or logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"logits must be float32, bfloat16 or float16 [B, V], got "
                         f"{logits.dtype} {tuple(logits.shape)}")
    batch, vocab = logits.shape
    if batch == 0:
        return torch.empty(0, dtype=torch.int64, device=logits.device)
    logits = logits.contiguous()
    t = temperature.to(torch.float32).contiguous()
    k, p = top_k.to(torch.int64).contiguous(), top_p.to(torch.float32).contiguous()
    block_r, warps = select_rows(batch, vocab, logits.device)
    maxima, masses = group_maxima(logits, t, k, p)
    ids, unresolved = select_race(logits, maxima, masses, group_width(vocab), t, k, p, KMAX,
                                  seed, block_r, warps)
    fallback_race(logits, t, k, p, unresolved, ids, seed)
    return ids
