"""triton-logprobs: the values and ranks of requested token ids in one fused pass over the row.

For each row, with a threshold c and a temperature t (raw modes: c = -inf, t = 1):
key_j = x_j where x_j >= c, else -inf; z_j = key_j / t. One pass over the row in chunks keeps
the online max m and sum-exp s of z (s <- s e^(m_old - m_new) + sum e^(z - m_new), the shift
taken as 0 while m = -inf so that no NaN arises), and counts, for each of the K requested ids,
#{j : key_j >= key_id}. The values are z_id (logits modes) or z_id - (m + log s) (logprobs
modes), -inf at padding; the count is the rank (x -> x - lse and x -> x / t are increasing,
so it is the count on the mode's exact values, with no second pass).

Processed modes: top-k and top-p each keep a set {x >= c} of the row, so together they are
one threshold c per row, computed in torch from the kept set of torch-logprobs (a sort for
the top-k boundary and the top-p cumulative sum); the fused pass then applies it on the fly.

Memory traffic: the logits read once (2 or 4 B V bytes), the ids and their K values
gathered (8 B K + 4 B K bytes, 2 B K for 16-bit logits), values and ranks written (12 B K
bytes). Processed modes add the torch threshold (a sort and a float64 cumulative sum of
[B, V]).
"""

import os

import torch
import triton
import triton.language as tl

from kernels.logprobs.torch_logprobs import kept_entries

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
GPU_BLOCK, GPU_WARPS = 2048, 8          # one row per program on the GPU (not yet swept)
CPU_TILE = 2**20                        # elements of the [rows, K, BLOCK] rank tile per program


@triton.jit
def masked_keys(x, cutoff):
    """x where x >= c (row threshold), else -inf."""
    return tl.where(x >= cutoff[:, None], x, float("-inf"))


@triton.jit
def online_sum_exp(m, s, z):
    """Fold a [R, BLOCK] tile of z into the running (max, sum of e^(z - max)); the shift is 0
    while the max is -inf (never -inf - -inf)."""
    m_new = tl.maximum(m, tl.max(z, axis=1))
    shift = tl.where(m_new == float("-inf"), 0.0, m_new)
    s = s * tl.exp(m - shift) + tl.sum(tl.exp(z - shift[:, None]), axis=1)
    return m_new, s


@triton.jit
def _logprobs_kernel(logits_ptr, ids_ptr, cutoff_ptr, temp_ptr, values_ptr, ranks_ptr,
                     B, V, K, stride, LOGPROBS: tl.constexpr, BLOCK_R: tl.constexpr,
                     BLOCK: tl.constexpr, K_PAD: tl.constexpr):
    """Each program: BLOCK_R rows, the whole row in chunks of BLOCK columns."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < B
    base = rows.to(tl.int64)[:, None] * stride
    slots = rows.to(tl.int64)[:, None] * K + tl.arange(0, K_PAD)[None, :]
    slot_ok = row_ok[:, None] & (tl.arange(0, K_PAD)[None, :] < K)
    ids = tl.load(ids_ptr + slots, mask=slot_ok, other=-1)
    live = (ids >= 0) & (ids < V)
    cutoff = tl.load(cutoff_ptr + rows, mask=row_ok, other=float("-inf"))
    t = tl.load(temp_ptr + rows, mask=row_ok, other=1.0)
    x_id = tl.load(logits_ptr + base + ids, mask=live, other=float("-inf")).to(tl.float32)
    key_id = masked_keys(x_id, cutoff)

    m = tl.full([BLOCK_R], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK_R], tl.float32)
    count = tl.zeros([BLOCK_R, K_PAD], tl.int32)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        col_ok = cols < V
        x = tl.load(logits_ptr + base + cols[None, :], mask=row_ok[:, None] & col_ok[None, :],
                    other=float("-inf")).to(tl.float32)
        key = masked_keys(x, cutoff)
        m, s = online_sum_exp(m, s, key / t[:, None])
        at_least = (key[:, None, :] >= key_id[:, :, None]) & col_ok[None, None, :]
        count += tl.sum(at_least.to(tl.int32), axis=2)

    z_id = key_id / t[:, None]
    if LOGPROBS:
        lse = tl.where(s > 0, m, 0.0) + tl.log(tl.maximum(s, 1.0))  # s = 0 or s >= 1
        z_id = tl.where(z_id == float("-inf"), float("-inf"), z_id - lse[:, None])
    tl.store(values_ptr + slots, tl.where(live, z_id, float("-inf")), mask=slot_ok)
    tl.store(ranks_ptr + slots, tl.where(live, count, 0).to(tl.int64), mask=slot_ok)


def row_cutoffs(logits: torch.Tensor, temperature, top_k, top_p, mode: str):
    """(c float32 [B], t float32 [B]): the threshold on x of the kept set and the divisor;
    raw modes: (-inf, 1)."""
    batch = logits.shape[0]
    ones = torch.ones(batch, dtype=torch.float32, device=logits.device)
    if mode.startswith("raw"):
        return torch.full_like(ones, float("-inf")), ones
    x = logits.to(torch.float32)
    _, keep = kept_entries(x, temperature, top_k, top_p)
    cutoff = torch.where(keep, x, float("inf")).amin(dim=1)
    t = temperature.to(torch.float32)
    return cutoff.contiguous(), torch.where(t == 0, ones, t).contiguous()


def _launch_shape(batch: int, vocab: int, k_pad: int, device: torch.device):
    """(BLOCK_R, BLOCK, num_warps): one row per program on the GPU; in the interpreter
    (which pays per program and per loop trip) as many rows and columns as CPU_TILE holds."""
    if INTERPRET or device.type != "cuda":
        block = min(4096, triton.next_power_of_2(vocab))
        rows = max(1, min(triton.next_power_of_2(batch), CPU_TILE // (k_pad * block)))
        return rows, block, 4
    return 1, GPU_BLOCK, GPU_WARPS


def logprobs_triton(logits: torch.Tensor, token_ids: torch.Tensor, mode: str,
                    temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Family ``logprobs``: (values float32 [B, K], -inf at padding; ranks int64 [B, K])."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    logits = logits.contiguous()
    token_ids = token_ids.to(torch.int64).contiguous()
    (batch, vocab), slots = logits.shape, token_ids.shape[1]
    values = torch.empty((batch, slots), dtype=torch.float32, device=logits.device)
    ranks = torch.empty((batch, slots), dtype=torch.int64, device=logits.device)
    if batch == 0 or slots == 0:
        return values, ranks
    cutoff, t = row_cutoffs(logits, temperature, top_k, top_p, mode)
    k_pad = triton.next_power_of_2(slots)
    block_r, block, warps = _launch_shape(batch, vocab, k_pad, logits.device)
    _logprobs_kernel[(triton.cdiv(batch, block_r),)](
        logits, token_ids, cutoff, t, values, ranks, batch, vocab, slots, logits.stride(0),
        LOGPROBS=mode.endswith("logprobs"), BLOCK_R=block_r, BLOCK=block, K_PAD=k_pad,
        num_warps=warps)
    return values, ranks
