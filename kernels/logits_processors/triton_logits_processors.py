"""triton-logits-processors: every logits processor in one launch, at the memory floor.

Memory traffic: the logits read once and the result written once (float32 [B, V]), the
bitmask's words read beside their columns (4 bytes per 32 columns), each row's history
(int64 [B, L]) read once; the few tokens the sparse processors touch (history, bias and stop
ids, at most L + NB + S a row) are read, listed in a scratch of 16 LP + 8 NB + 4 S bytes a
row (the L2) and written again.

One launch, grid (row blocks, S + 1). Of each row block's S + 1 programs, one lists the
value of every token its rows' sparse processors touch (triton_sparse.py: the history's
tokens with the penalties, the biased tokens' whole values, the stop tokens of rows under
min_tokens), computed from the logits; the other S write a column chunk each, y = x
(float32) where the bitmask allows the token (bit t mod 32 of word t // 32, least
significant first; no token past 32 W), else -inf. Which program lists turns with the row
block, so that every wave of programs mixes the latency-bound listing with the
bandwidth-bound chunks. Each program then takes a ticket; the row block's last (every
store of the others released before its acquire) resets it and writes the lists over the
chunks in order, history, then bias, then stop tokens, barriers between them (a later list
overwrites an earlier one's tokens).

All arithmetic in float32 (the contract grants 2^-21 of the terms' magnitudes: a few
float32 roundings). The compiled kernel depends on the logits' dtype, whether a penalty or
a bitmask is given, the history bucket (LP, the history width rounded up to a power of
two, at least 32) and the launch; B, V, L, NB, S, W and which penalties are given are
runtime values (absent penalties are neutral: 1, 0, 0).

Launch settings are keyword arguments of ``logits_processors_triton.with_launch`` (a
``Launch``; ``launch_for`` gives the defaults): on a GPU one row a program, each row split
into chunks for ``programs_per_sm`` programs per SM; on a CPU (the Triton interpreter,
which pays per program and per loop trip) many rows a program, one chunk a row.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.logits_processors.triton_sparse import (
    BIG,
    allowed_by_bitmask,
    apply_list,
    apply_stop,
    history_length,
    list_bias,
    list_history,
    list_stop,
)
from sampling_harness.kernels.split_scratch import (
    cdiv,
    multiprocessors,
    next_power_of_2,
    split_scratch,
)

MAX_HISTORY = 2**14                    # widest history one program sorts in registers
SMALLEST_SORT = 5                      # log2 of the narrowest sorted history compiled
SLOTS = 16                             # stop ids (and history ids counted) a step
BIAS_SLOTS = 4                         # biased tokens compared with every key a step
APPLY = 1024                           # listed tokens written a step


@triton.jit
def dense_chunk(logits_ptr, out_ptr, mask_ptr, rows64, row_ok, lo, hi, V, W, stride,
                HAS_MASK: tl.constexpr, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """Phase 1: columns [lo, hi) of the rows, y = x (float32) where the bitmask allows the
    token, else -inf."""
    for start in tl.range(lo, hi, BLOCK, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK)[None, :]
        ok = row_ok[:, None] & (cols < hi)
        x = tl.load(logits_ptr + rows64 * stride + cols, mask=ok, other=0.0).to(tl.float32)
        allowed = allowed_by_bitmask(mask_ptr, rows64, cols, W, ok, HAS_MASK)
        tl.store(out_ptr + rows64 * V + cols, tl.where(allowed, x, float("-inf")), mask=ok)


@triton.jit
def list_sparse(logits_ptr, ids_ptr, prompt_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr,
                bias_ptr, mask_ptr, stop_ptr, min_ptr, lists, rows, B, V, L, NB, W, S,
                stride, has_rep, has_freq, has_pres, counted, PENALTIES: tl.constexpr,
                HAS_MASK: tl.constexpr, R: tl.constexpr, DIMS: tl.constexpr,
                LOG_LP: tl.constexpr, SLOTS: tl.constexpr, BIAS_SLOTS: tl.constexpr):
    """Phases 2 and 3 computed: the lists of the rows' touched tokens (triton_sparse.py)."""
    row_ok = rows < B
    rows64 = rows.to(tl.int64)[:, None]
    none = rows * 0          # flags as row vectors: the penalties absent stay neutral
    rep = tl.load(rep_ptr + rows, mask=row_ok & (none + has_rep != 0), other=1.0)[:, None]
    freq = tl.load(freq_ptr + rows, mask=row_ok & (none + has_freq != 0), other=0.0)[:, None]
    pres = tl.load(pres_ptr + rows, mask=row_ok & (none + has_pres != 0), other=0.0)[:, None]
    prompt = tl.load(prompt_ptr + rows, mask=row_ok, other=0).to(tl.int32)[:, None]
    if PENALTIES:
        keys, output_length = list_history(logits_ptr, ids_ptr, mask_ptr, lists, rows64,
                                           row_ok, prompt, V, L, W, stride, rep, freq, pres,
                                           HAS_MASK, DIMS, LOG_LP)
    else:
        keys = tl.full([R, 1], BIG, tl.int32)          # no history to compare with
        output_length = history_length(ids_ptr, rows64, row_ok, L, counted, R, SLOTS) - prompt
    for first in range(0, NB, BIAS_SLOTS):
        list_bias(logits_ptr, bias_ids_ptr, bias_ptr, mask_ptr, keys, lists + (4 << LOG_LP),
                  rows64, row_ok, first, V, NB, W, stride, rep, freq, pres, PENALTIES,
                  HAS_MASK, BIAS_SLOTS)
    least = tl.load(min_ptr + rows, mask=row_ok & (none + S > 0), other=0)[:, None]
    for first in range(0, S, SLOTS):
        list_stop(stop_ptr, lists + (4 << LOG_LP) + 2 * NB, rows64, row_ok,
                  output_length < least, first, V, S, SLOTS)


@triton.jit
def _processors_kernel(logits_ptr, out_ptr, ids_ptr, prompt_ptr, rep_ptr, freq_ptr, pres_ptr,
                       bias_ids_ptr, bias_ptr, mask_ptr, stop_ptr, min_ptr, lists_ptr,
                       tickets_ptr, B, V, L, NB, W, S, stride, CHUNK, has_rep, has_freq,
                       has_pres, counted, listed, PENALTIES: tl.constexpr,
                       HAS_MASK: tl.constexpr, R: tl.constexpr, BLOCK: tl.constexpr,
                       DIMS: tl.constexpr, LOG_LP: tl.constexpr, SLOTS: tl.constexpr,
                       BIAS_SLOTS: tl.constexpr, APPLY: tl.constexpr, STAGES: tl.constexpr):
    rows = tl.program_id(0) * R + tl.arange(0, R)
    row_ok = rows < B
    rows64 = rows.to(tl.int64)[:, None]
    lists = lists_ptr + rows64 * ((4 << LOG_LP) + 2 * NB + S)
    # one program of each row block lists the sparse tokens, the others write a chunk each;
    # which one turns with the row block, so every wave of programs holds a few of them
    part = tl.program_id(1)
    sparse = tl.program_id(0) % tl.num_programs(1)
    if part == sparse:
        list_sparse(logits_ptr, ids_ptr, prompt_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr,
                    bias_ptr, mask_ptr, stop_ptr, min_ptr, lists, rows, B, V, L, NB, W, S,
                    stride, has_rep, has_freq, has_pres, counted, PENALTIES, HAS_MASK, R, DIMS,
                    LOG_LP, SLOTS, BIAS_SLOTS)
    else:
        lo = (part - (part > sparse).to(tl.int32)) * CHUNK
        dense_chunk(logits_ptr, out_ptr, mask_ptr, rows64, row_ok, lo,
                    tl.minimum(lo + CHUNK, V), V, W, stride, HAS_MASK, BLOCK, STAGES)

    # the row block's last program writes the lists over the dense result, in order
    tl.debug_barrier()                              # all threads' stores before the release
    ticket = tl.atomic_add(tickets_ptr + tl.program_id(0), 1)        # acq_rel, gpu scope
    if ticket == tl.num_programs(1) - 1:
        tl.atomic_xchg(tickets_ptr + tl.program_id(0), 0)             # ready for the next call
        apply_list(out_ptr, lists + (2 << LOG_LP), lists + (3 << LOG_LP), rows64, row_ok,
                   listed, V, APPLY)
        tl.debug_barrier()
        apply_list(out_ptr, lists + (4 << LOG_LP), lists + (4 << LOG_LP) + NB, rows64, row_ok,
                   NB, V, APPLY)
        tl.debug_barrier()
        apply_stop(out_ptr, lists + (4 << LOG_LP) + 2 * NB, rows64, row_ok, S, V, APPLY)


@dataclass(frozen=True)
class Launch:
    """How ``_processors_kernel`` is launched (``launch_for``: the defaults)."""

    block: int                   # columns a dense step
    warps: int
    rows: int = 1                # rows a program
    splits: int = 1              # programs a row (capped by its blocks)
    stages: int = 3              # dense blocks in flight in Triton's pipelined loop


# the defaults of logits_processors_triton's keyword launch settings: block 4096 and 8 warps
# were the fastest of an H100 sweep (bench --launch) at 256 x 151936 x 2048
GPU = Launch(block=4096, warps=8, stages=3)
GPU_PROGRAMS_PER_SM = 2
CPU_BLOCK, CPU_TILE = 2**14, 2**20      # CPU: columns a block at most; entries a program


def launch_for(batch: int, vocab: int, history: int, device: torch.device, gpu: Launch = GPU,
               programs_per_sm: int = GPU_PROGRAMS_PER_SM) -> Launch:
    """GPU: ``gpu``, one row a program, each row split for ``programs_per_sm`` programs per
    SM, at least one warp per 256 history slots (up to 32: the sorted keys stay in
    registers). CPU: one block a row up to CPU_BLOCK columns, as many rows a program as
    CPU_TILE entries hold."""
    if device.type == "cuda":
        keys_warps = (1 << history_bucket(history)) // 256
        return replace(gpu, splits=cdiv(programs_per_sm * multiprocessors(device), batch),
                       warps=min(32, max(gpu.warps, keys_warps)))
    block = max(16, min(CPU_BLOCK, next_power_of_2(vocab)))
    widest = max(block, next_power_of_2(history))
    return Launch(block=block, warps=4, rows=max(1, min(next_power_of_2(batch),
                                                        CPU_TILE // widest)))


def history_bucket(history: int) -> int:
    """log2 of the sorted width of a history of ``history`` ids: the next power of two, at
    least 2^SMALLEST_SORT (one compiled variant per power)."""
    return max(SMALLEST_SORT, max(history - 1, 0).bit_length())


def split_columns(vocab: int, block: int, wanted: int) -> tuple[int, int]:
    """(S, CHUNK): a row split into S chunks of whole blocks, at most ``wanted``, none
    empty."""
    blocks = cdiv(vocab, block)
    chunk = cdiv(blocks, max(1, min(blocks, wanted))) * block
    return cdiv(vocab, chunk), chunk


def logits_processors_launch(logits, token_ids, num_prompt_tokens, *, repetition_penalty=None,
                             frequency_penalty=None, presence_penalty=None,
                             logit_bias_ids=None, logit_bias_values=None,
                             allowed_bitmask=None, stop_token_ids=None, min_tokens=None,
                             launch: Launch | None = None, gpu: Launch = GPU,
                             programs_per_sm: int = GPU_PROGRAMS_PER_SM) -> torch.Tensor:
    """The contract's call under ``launch`` (None: ``launch_for``'s with ``gpu`` and
    ``programs_per_sm``)."""
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    (batch, vocab), history = logits.shape, token_ids.shape[1]
    if vocab >= 2**29 or history > MAX_HISTORY:
        raise ValueError(f"V = {vocab} must be below 2^29 and L = {history} at most "
                         f"{MAX_HISTORY}")
    out = torch.empty((batch, vocab), dtype=torch.float32, device=logits.device)
    if batch == 0 or vocab == 0:
        return out
    launch = launch or launch_for(batch, vocab, history, logits.device, gpu, programs_per_sm)
    splits, chunk = split_columns(vocab, launch.block, launch.splits)
    row_blocks = cdiv(batch, launch.rows)
    penalties = [p is not None for p in (repetition_penalty, frequency_penalty,
                                         presence_penalty)]
    sorting = any(penalties) and history > 0
    log_lp = history_bucket(history)
    stop = stop_token_ids is not None and min_tokens is not None
    bias = logit_bias_ids is not None
    numbers, indices = out, token_ids      # pointers of absent inputs (masked off)
    operands = [t.contiguous() if t is not None else spare for t, spare in (
        (token_ids, indices), (num_prompt_tokens, indices), (repetition_penalty, numbers),
        (frequency_penalty, numbers), (presence_penalty, numbers), (logit_bias_ids, indices),
        (logit_bias_values, numbers), (allowed_bitmask, numbers),
        (stop_token_ids if stop else None, indices), (min_tokens if stop else None, indices))]
    widths = (logit_bias_ids.shape[1] if bias else 0,
              allowed_bitmask.shape[1] if allowed_bitmask is not None else 0,
              stop_token_ids.shape[1] if stop else 0)
    row_words = (4 << log_lp) + 2 * widths[0] + widths[2]
    tickets, lists = split_scratch("triton-logits-processors", logits.device, row_blocks,
                                   row_blocks * launch.rows * row_words, (torch.int32,))
    _processors_kernel[(row_blocks, splits + 1)](
        logits, out, *operands, lists, tickets, batch, vocab, history, *widths,
        logits.stride(0), chunk, *(int(p) for p in penalties), history if stop else 0,
        (1 << log_lp) if sorting else 0, PENALTIES=sorting,
        HAS_MASK=allowed_bitmask is not None, R=launch.rows, BLOCK=launch.block,
        DIMS=(launch.rows - 1).bit_length() + log_lp, LOG_LP=log_lp, SLOTS=SLOTS,
        BIAS_SLOTS=BIAS_SLOTS, APPLY=APPLY, STAGES=launch.stages, num_warps=launch.warps)
    return out


def logits_processors_triton(logits, token_ids, num_prompt_tokens, *, repetition_penalty=None,
                             frequency_penalty=None, presence_penalty=None,
                             logit_bias_ids=None, logit_bias_values=None,
                             allowed_bitmask=None, stop_token_ids=None,
                             min_tokens=None) -> torch.Tensor:
    """Family ``logits-processors``: float32 [B, V], the processed logits (module
    docstring), in a fresh tensor. Launch settings: ``with_launch``."""
    return logits_processors_launch(
        logits, token_ids, num_prompt_tokens, repetition_penalty=repetition_penalty,
        frequency_penalty=frequency_penalty, presence_penalty=presence_penalty,
        logit_bias_ids=logit_bias_ids, logit_bias_values=logit_bias_values,
        allowed_bitmask=allowed_bitmask, stop_token_ids=stop_token_ids, min_tokens=min_tokens)


def with_launch(block: int = GPU.block, warps: int = GPU.warps, stages: int = GPU.stages,
                programs_per_sm: int = GPU_PROGRAMS_PER_SM):
    """``logits_processors_triton`` under other GPU launch settings (``bench --launch``): the
    dense ``block`` width, ``warps``, the dense loop's ``stages`` and ``programs_per_sm``
    (the split); the interpreter takes its own blocks."""
    return functools.partial(logits_processors_launch,
                             gpu=Launch(block=block, warps=warps, stages=stages),
                             programs_per_sm=programs_per_sm)


logits_processors_triton.with_launch = with_launch
