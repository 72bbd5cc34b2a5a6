"""Kernels that corrupt memory, one field bug each (declared with their bugs and catching
checks by each family: suites/<family>/__init__.py).

Their outputs are right, or nearly: what is wrong is where they write or what they read.
Two are caught by the harness's guard bands on any device (harness/run/guard.py); the others
only by compute-sanitizer on a GPU (``--sanitize``; registered with their tool), because
their stray store lands in the padding of a CUDA allocation, or their stray read is
overwritten before anyone looks. Those are never run on a CPU: there a store past a malloc
chunk may corrupt the heap of the harness's own process.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.logprobs.torch_logprobs import logprobs_torch
from sampling_harness.kernels.rejection.torch_rejection import rejection_torch
from sampling_harness.kernels.sample.torch_race import race_fp64

BLOCK = 1024
BIG_BLOCK = 1 << 16     # few programs: the Triton interpreter pays per program


# Memory traffic: probs read once and written once in place (4 B V bytes each way), plus the
# one element past their end that the off-by-one bound reaches.
@triton.jit
def _scores_in_place_kernel(probs_ptr, noise_ptr, n, BLOCK_N: tl.constexpr):
    """probs <- probs / noise, in place over the flat table; the bound n is inclusive."""
    offs = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    reach = offs <= n                                  # the bug: <= where < was meant
    p = tl.load(probs_ptr + offs, mask=offs < n, other=0.0)
    q = tl.load(noise_ptr + offs, mask=offs < n, other=1.0)
    tl.store(probs_ptr + offs, p / q, mask=reach)


def store_past_probs(probs, seed):
    """The exponential race that overwrites probs with its scores p / q in place (the
    contract allows it), with an inclusive bound in the store mask and the grid: one score
    lands past the end of probs."""
    generator = torch.Generator(probs.device).manual_seed(seed)
    noise = torch.empty_like(probs).exponential_(generator=generator)
    n = probs.numel()
    _scores_in_place_kernel[(triton.cdiv(n + 1, BIG_BLOCK),)](probs, noise, n,
                                                            BLOCK_N=BIG_BLOCK)
    return probs.argmax(dim=-1)


# Memory traffic: ids read once and written once (8 B bytes each way), plus one element
# stored past the output's end.
@triton.jit
def _copy_ids_kernel(out_ptr, ids_ptr, B, BLOCK_B: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    ids = tl.load(ids_ptr + offs, mask=offs < B, other=0)
    tl.store(out_ptr + offs, ids, mask=offs <= B)     # the bug: one slot past the output


def ids_past_end(probs, seed):
    """Right ids, stored into the output by a kernel whose store mask reaches one slot past
    its end. The slot lies in the padding of the CUDA allocation: only memcheck sees it."""
    ids = race_fp64(probs, seed).to(torch.int64)
    out = torch.empty_like(ids)
    _copy_ids_kernel[(triton.cdiv(ids.numel() + 1, BLOCK),)](out, ids, ids.numel(),
                                                             BLOCK_B=BLOCK)
    return out


# Memory traffic: an uninitialised scratch buffer read once (8 B bytes) and copied into the
# output, which a second launch then overwrites with the right ids.
@triton.jit
def _copy_kernel(out_ptr, src_ptr, n, BLOCK_N: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def reads_uninitialised(probs, seed):
    """Copies a scratch buffer nobody wrote into the output (a 'warm-up' of the output that
    reads torch.empty memory), then writes the right ids over it: the ids are right, the
    read is not (vLLM PR 37238 read uninitialised slots in a greedy path). initcheck."""
    ids = race_fp64(probs, seed).to(torch.int64)
    scratch, out = torch.empty_like(ids), torch.empty_like(ids)
    grid = (triton.cdiv(ids.numel(), BLOCK),)
    _copy_kernel[grid](out, scratch, ids.numel(), BLOCK_N=BLOCK)
    _copy_kernel[grid](out, ids, ids.numel(), BLOCK_N=BLOCK)
    return out


# Memory traffic: the output read once and written once (8 B (K + 1) bytes each way), the
# last slot of each row stored one row further on.
@triton.jit
def _shift_last_slot_kernel(out_ptr, src_ptr, K1, BLOCK_K: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    slots = tl.arange(0, BLOCK_K)
    values = tl.load(src_ptr + row * K1 + slots, mask=slots < K1, other=-1)
    last = slots == K1 - 1
    target = tl.where(last, (row + 1) * K1 + slots, row * K1 + slots)   # the bug: row + 1
    tl.store(out_ptr + target, values, mask=slots < K1)


def last_slot_next_row(draft_token_ids, num_draft_tokens, draft_probs, target_probs,
                       bonus_token_ids, greedy, seed):
    """torch-rejection's tokens, assembled by a kernel that writes each row's last slot
    (the bonus slot) one row too far: the last request writes past the output's end."""
    tokens = rejection_torch(draft_token_ids, num_draft_tokens, draft_probs, target_probs,
                             bonus_token_ids, greedy, seed)
    out = torch.empty_like(tokens)
    rows, k1 = tokens.shape
    _shift_last_slot_kernel[(rows,)](out, tokens.contiguous(), k1,
                                     BLOCK_K=triton.next_power_of_2(k1))
    return out


def logits_in_place(logits, token_ids, mode, temperature, top_k, top_p):
    """torch-logprobs after normalising the logits in place, log_softmax_ style, to save a
    copy: every logprob it returns is right, and the engine then samples from logprobs
    where it expected logits (the temperature lands on a shifted row; top-k and top-p
    thresholds taken from the logits no longer match)."""
    logits.sub_(logits.float().logsumexp(dim=-1, keepdim=True).to(logits.dtype))
    return logprobs_torch(logits, token_ids, mode, temperature, top_k, top_p)
