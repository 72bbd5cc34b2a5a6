"""triton-logits-processors: every logits processor at the memory floor, in a fresh float32
result: the dense pass (triton_dense.py) and the sparse one (triton_sparse.py) compiled as
separate kernels, each with its own tile, warps and occupancy.

Memory traffic: the logits read once and the result written once (float32 [B, V]), the
bitmask's words read beside their columns (4 bytes per 32 columns), each row's history
(int64 [B, L]) read once; the few tokens the sparse processors touch (history, bias and stop
ids, at most L + NB + S a row) read again from the result (gathers) and rewritten, the
sort's work space (8 LP bytes a row, L2) written and read back.

The two kernels, in stream order: the dense kernel, y = x (float32) where the bitmask
allows the token (bit t mod 32 of word t // 32, least significant first; no token past 32
W), else -inf, in many short programs; then the sparse kernel, one row a program, which
rewrites every touched token from its dense value (history with the penalties, then y + b
with the penalties for biased tokens, then -inf for the stop tokens of rows under
min_tokens; -inf stays -inf), barriers between the three phases (a later one overwrites an
earlier one's tokens). The sparse kernel is launched only when a sparse processor has work
(the bitmask alone: one launch). On a long dense grid (``long_dense_grid``) it is a
programmatic dependent of the dense kernel (PDL): it launches once every dense program has
started, reads its inputs and sorts while the last dense programs run, and waits for the
dense grid's end before its first store; this hides the gap between the kernels.

H100, 256 x 151936 x 2048, every processor: 0.152 ms the call in the bench (L2 flushed),
83 % of its read ceiling, 87 % of the floor; the dense kernel alone 0.112 ms, at the
ceiling (docs/measurements/bench.md). The sparse kernel's 512 threads take 64 registers
(``sparse_regs``; 82 uncapped), so that two programs share an SM and the 256 run in one
wave; the touched sectors bound it, not its sort. Measured and removed: one launch (a row
block's listing program beside its column chunks, the last to take a ticket applying the
lists; 42 % of the ceiling); the sparse kernel's lists made on a side stream beside the
dense kernel, then applied (72 %); a persistent dense kernel leaving registers for the
sparse programs to run beside it (no gain: the dense kernel streams slower with fewer
programs an SM); the run counts by gathers and scans in registers in place of the work
space (spills: 0.354 ms).

All arithmetic in float32 (the contract grants 2^-21 of the terms' magnitudes: a few
float32 roundings). A compiled kernel depends on the logits' dtype (the dense one), whether
a penalty or a bitmask is given, whether it runs under PDL, the history bucket (LP, the
history width rounded up to a power of two, at least 32) and the launch; B, V, L, NB, W, S
and which penalties are given are runtime values (absent penalties are neutral: 1, 0, 0).

Launch settings are keyword arguments of ``logits_processors_triton.with_launch`` (a
``Launch``; ``launch_for`` gives the defaults): on a GPU one row a program; on a CPU (the
Triton interpreter, which pays per program and per loop trip) many rows a program, a row's
columns in one block.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import torch

from sampling_harness.kernels.logits_processors.triton_dense import launch_dense
from sampling_harness.kernels.logits_processors.triton_sparse import sparse_kernel
from sampling_harness.kernels.split_scratch import (
    cdiv,
    dependent_launch,
    multiprocessors,
    next_power_of_2,
    split_scratch,
)

MAX_HISTORY = 2**14                    # widest history one program sorts in registers
SMALLEST_SORT = 5                      # log2 of the narrowest sorted history compiled
SLOTS = 16                             # stop ids a step
BIAS_SLOTS = 8                         # biased tokens compared with every key a step


@dataclass(frozen=True)
class Launch:
    """How the kernels are launched (``launch_for``: the defaults)."""

    block: int                   # dense: columns a program
    warps: int                   # dense kernel's warps
    rows: int = 1                # rows a program, both kernels (a power of two)
    sparse_warps: int = 0        # sparse kernel's warps; 0: ``sort_warps``
    sparse_regs: int = 64        # the sparse kernel's registers a thread at most (0: no cap)
    pdl: bool | None = None      # the sparse kernel a programmatic dependent (sm_90 and up);
                                 # None: where the dense grid is long (``long_dense_grid``)


# the defaults of logits_processors_triton's keyword launch settings
GPU = Launch(block=4096, warps=8)
CPU_BLOCK, CPU_TILE = 2**14, 2**20      # CPU: columns a block at most; entries a program


def launch_for(batch: int, vocab: int, history: int, device: torch.device,
               gpu: Launch = GPU) -> Launch:
    """GPU: ``gpu``, one row a program; the sparse kernel's warps by ``sort_warps`` unless
    set. CPU: one block a row up to CPU_BLOCK columns, as many rows a program as CPU_TILE
    entries hold, 4 warps."""
    if device.type == "cuda":
        pdl = long_dense_grid(batch, vocab, gpu.block, device) if gpu.pdl is None else gpu.pdl
        return replace(gpu, rows=1, sparse_warps=gpu.sparse_warps or sort_warps(history),
                       pdl=pdl)
    block = max(32, min(CPU_BLOCK, next_power_of_2(vocab)))
    widest = max(block, next_power_of_2(history))
    return Launch(block=block, warps=4, sparse_warps=4, sparse_regs=0, pdl=False,
                  rows=max(1, min(next_power_of_2(batch), CPU_TILE // widest)))


def sort_warps(history: int) -> int:
    """One warp per 128 sorted keys, 4 to 32: the keys stay in registers, 4 a thread (H100,
    L 2048: the sparse kernel alone 64 us at 16 warps, 76 us at 8, 65 us at 32)."""
    return min(32, max(4, (1 << history_bucket(history)) // 128))


PDL_PROGRAMS_PER_SM = 32              # dense programs an SM from which PDL is taken


def long_dense_grid(batch: int, vocab: int, block: int, device: torch.device) -> bool:
    """Whether the dense grid holds at least PDL_PROGRAMS_PER_SM programs an SM (about 4
    waves). Under PDL the sparse programs launch once every dense program has started and
    take an SM's registers while they wait for the dense grid's end: worth it on a long grid,
    a loss on a short one (H100, 3422847: 256 x 151936, 74 programs an SM, 0.1656 ->
    0.1630 ms; 32 x 128256, 8 an SM, 0.0283 -> 0.0377 ms; docs/measurements/bench.md)."""
    programs = batch * cdiv(vocab, max(32, block))
    return programs >= PDL_PROGRAMS_PER_SM * multiprocessors(device)


def history_bucket(history: int) -> int:
    """log2 of the sorted width of a history of ``history`` ids: the next power of two, at
    least 2^SMALLEST_SORT (one compiled variant per power)."""
    return max(SMALLEST_SORT, max(history - 1, 0).bit_length())


def logits_processors_launch(logits, token_ids, num_prompt_tokens, *, repetition_penalty=None,
                             frequency_penalty=None, presence_penalty=None,
                             logit_bias_ids=None, logit_bias_values=None,
                             allowed_bitmask=None, stop_token_ids=None, min_tokens=None,
                             launch: Launch | None = None, gpu: Launch = GPU) -> torch.Tensor:
    """The contract's call under ``launch`` (None: ``launch_for``'s with ``gpu``)."""
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    (batch, vocab), history = logits.shape, token_ids.shape[1]
    if vocab >= 2**29 or history > MAX_HISTORY:
        raise ValueError(f"V = {vocab} must be below 2^29 and L = {history} at most "
                         f"{MAX_HISTORY}")
    launch = launch or launch_for(batch, vocab, history, logits.device, gpu)
    out = torch.empty((batch, vocab), dtype=torch.float32, device=logits.device)
    if batch == 0 or vocab == 0:
        return out
    penalties = [p is not None for p in (repetition_penalty, frequency_penalty,
                                         presence_penalty)]
    sorting = any(penalties) and history > 0
    stop = stop_token_ids is not None and min_tokens is not None
    bias_width = logit_bias_ids.shape[1] if logit_bias_ids is not None else 0
    stop_width = stop_token_ids.shape[1] if stop else 0
    sparse = sorting or bias_width or stop_width  # else the bitmask at most: nothing sparse
    pdl = bool(sparse and launch.pdl and dependent_launch(logits.device))
    bitmask = allowed_bitmask.contiguous() if allowed_bitmask is not None else None
    launch_dense(logits, out, bitmask, bitmask.shape[1] if bitmask is not None else 0,
                 launch.rows, launch.block, launch.warps, pdl)
    if not sparse:
        return out
    row_blocks, log_lp = cdiv(batch, launch.rows), history_bucket(history)
    numbers, indices = out, token_ids      # pointers of absent inputs (masked off)
    operands = [t.contiguous() if t is not None else spare for t, spare in (
        (token_ids, indices), (num_prompt_tokens, indices), (repetition_penalty, numbers),
        (frequency_penalty, numbers), (presence_penalty, numbers), (logit_bias_ids, indices),
        (logit_bias_values, numbers), (stop_token_ids if stop else None, indices),
        (min_tokens if stop else None, indices))]
    # the sort's work space, 2 LP int32 words a row, and the stash of the biased tokens'
    # dense values, NB float32 words a row (held across calls; tickets unused)
    _, work, stash = split_scratch(
        "triton-logits-processors", logits.device, 1,
        max(row_blocks * launch.rows * (2 << log_lp), batch * bias_width),
        (torch.int32, torch.float32))
    sparse_kernel[(row_blocks,)](        # after the dense writes, in stream order
        out, *operands, work, stash, batch, vocab, history, bias_width, stop_width,
        *(int(p) for p in penalties), history if stop else 0,
        PENALTIES=sorting, R=launch.rows, DIMS=(launch.rows - 1).bit_length() + log_lp,
        LOG_LP=log_lp, SLOTS=SLOTS, BIAS_SLOTS=BIAS_SLOTS, PDL=pdl,
        num_warps=launch.sparse_warps or sort_warps(history),
        **({"launch_pdl": True} if pdl else {}),
        **({"maxnreg": launch.sparse_regs} if launch.sparse_regs else {}))
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


def with_launch(block: int = GPU.block, warps: int = GPU.warps,
                sparse_warps: int = GPU.sparse_warps, sparse_regs: int = GPU.sparse_regs,
                pdl: bool | None = GPU.pdl):
    """``logits_processors_triton`` under other GPU launch settings (``bench --launch``):
    the dense kernel's ``block`` (columns a program) and ``warps``; the sparse kernel's
    ``sparse_warps`` (0: by the history) and ``sparse_regs`` (registers a thread at most,
    0: the compiler's choice); ``pdl``: the sparse kernel launched as a programmatic
    dependent of the dense one (compute capability 9 and up; None: on a long dense grid).
    The interpreter takes its own blocks and no PDL."""
    return functools.partial(logits_processors_launch,
                             gpu=Launch(block=block, warps=warps, sparse_warps=sparse_warps,
                                        sparse_regs=sparse_regs, pdl=pdl))


logits_processors_triton.with_launch = with_launch
