"""Wrong logits-processors kernels, one field bug each (declared with their bugs and catching
checks in suites/logits_processors/__init__.py).

Each is torch-logits-processors (kernels/logits_processors/torch_logits_processors.py) with
one piece swapped, so that everything but the bug is the clean kernel; the zero bitmask of
unconstrained rows is a wrapper around it (its bug lives in how a batch's bitmask is built).
All take the contract's arguments: (logits, token_ids, num_prompt_tokens, *, ...).
"""

from __future__ import annotations

import torch

from sampling_harness.kernels.logits_processors.torch_logits_processors import (
    bin_counts,
    frequency_presence,
    logits_processors_torch,
    output_counts,
    padded_to_extra_column,
    seen_tokens,
    stop_mask,
    unpack_bitmask,
    with_pieces,
)


def _divide_always(x, seen, penalty):
    """Seen tokens divided by the penalty whatever their sign."""
    return torch.where(seen, x / penalty.to(x.dtype)[:, None], x)


repetition_divides_negative = with_pieces(repetition=_divide_always)
repetition_divides_negative.__doc__ = (
    "The repetition penalty divides every seen logit: a negative one moves towards 0, so the "
    "penalised token becomes more likely (transformers issue 2302, NeMo issue 8194).")


def _counts_over_history(token_ids, num_prompt_tokens, vocab, pad=padded_to_extra_column):
    """Counts over the prompt and the output."""
    return bin_counts(token_ids, torch.ones_like(token_ids, dtype=torch.bool), vocab, pad)


frequency_over_prompt = with_pieces(output_counts=_counts_over_history)
frequency_over_prompt.__doc__ = (
    "Frequency and presence counted over the prompt and the output, not the output alone.")


def _presence_per_occurrence(x, counts, frequency_penalty, presence_penalty,
                             presence_amount=None):
    """The presence penalty subtracted once per occurrence."""
    return frequency_presence(x, counts, frequency_penalty, presence_penalty,
                              presence_amount=lambda c: c)


presence_per_occurrence = with_pieces(frequency_presence=_presence_per_occurrence)
presence_per_occurrence.__doc__ = (
    "The presence penalty subtracted for every occurrence of a token (a second frequency "
    "penalty), not once.")


def _padding_wraps(ids: torch.Tensor, vocab: int) -> torch.Tensor:
    """Python indexing: id -1 is token V - 1."""
    return torch.where(ids < 0, ids + vocab, ids)


def _output_counts_padding_wraps(token_ids, num_prompt_tokens, vocab):
    """Output counts with padding wrapped to V - 1."""
    return output_counts(token_ids, num_prompt_tokens, vocab, pad=_padding_wraps)


def _seen_padding_wraps(token_ids, num_prompt_tokens, vocab):
    """Seen tokens with padding wrapped to V - 1."""
    return seen_tokens(token_ids, num_prompt_tokens, vocab, pad=_padding_wraps)


padding_counted = with_pieces(output_counts=_output_counts_padding_wraps,
                              seen_tokens=_seen_padding_wraps)
padding_counted.__doc__ = (
    "The padding id -1 counted as a token (Python indexing: token V - 1) by the penalties' "
    "count tables.")


def _tail_open(bitmask: torch.Tensor, vocab: int) -> torch.Tensor:
    """The bitmask applied to its 32 W columns only: the columns past it stay allowed."""
    allowed = unpack_bitmask(bitmask, vocab)
    allowed[:, 32 * bitmask.shape[1]:] = True
    return allowed


bitmask_tail_unmasked = with_pieces(unpack_bitmask=_tail_open)
bitmask_tail_unmasked.__doc__ = (
    "A bitmask narrower than the padded logits leaves the tail allowed (xgrammar PR 694).")


def _msb_first(bitmask: torch.Tensor, vocab: int) -> torch.Tensor:
    """Bit 31 - t mod 32 of word t // 32."""
    shifts = 31 - torch.arange(32, device=bitmask.device, dtype=torch.int32)
    bits = ((bitmask[:, :, None] >> shifts) & 1).bool().flatten(1)
    allowed = torch.zeros(bits.shape[0], vocab, dtype=torch.bool, device=bits.device)
    width = min(vocab, bits.shape[1])
    allowed[:, :width] = bits[:, :width]
    return allowed


bitmask_msb_first = with_pieces(unpack_bitmask=_msb_first)
bitmask_msb_first.__doc__ = "The bitmask's bits read most significant first."


def _stop_while_at_most(token_ids, num_prompt_tokens, stop_token_ids, min_tokens, vocab):
    """The stop tokens masked while the output length is <= min_tokens."""
    return stop_mask(token_ids, num_prompt_tokens, stop_token_ids, min_tokens, vocab,
                     still_early=torch.le)


min_tokens_off_by_one = with_pieces(stop_mask=_stop_while_at_most)
min_tokens_off_by_one.__doc__ = (
    "Stop tokens masked while the output is at most min_tokens long (<=, not <): one step "
    "too many.")


STOP_PASS = 16          # stop ids a one-pass kernel holds (triton-logits-processors' first)


def _first_stop_ids(token_ids, num_prompt_tokens, stop_token_ids, min_tokens, vocab):
    """The stop mask from the first ``STOP_PASS`` stop ids of each row only."""
    return stop_mask(token_ids, num_prompt_tokens, stop_token_ids[:, :STOP_PASS], min_tokens,
                     vocab)


stop_list_cut = with_pieces(stop_mask=_first_stop_ids)
stop_list_cut.__doc__ = (
    "Only the first 16 stop ids of a row are masked: a kernel's one pass over the stop list "
    "without the loop for the rest (found by mutate in triton-logits-processors, m0526).")


penalties_in_logits_dtype = with_pieces(upcast=lambda logits: logits.clone())
penalties_in_logits_dtype.__doc__ = (
    "Every processor computed in the logits' own dtype (bfloat16 or float16), upcast at the "
    "end.")


def unconstrained_zero_bitmask(logits, token_ids, num_prompt_tokens, *, allowed_bitmask=None,
                               **processors):
    """In a batch that holds a constrained row, the bitmasks of the constrained rows (some
    word not -1) are copied into a zero-initialised batch buffer: unconstrained rows get all
    zeros and every token blocked. A batch without a constrained row keeps its bitmask
    (vllm-gaudi PR 1200)."""
    if allowed_bitmask is not None:
        constrained = (allowed_bitmask != -1).any(dim=1)
        if bool(constrained.any()):
            built = torch.zeros_like(allowed_bitmask)
            built[constrained] = allowed_bitmask[constrained]
            allowed_bitmask = built
    return logits_processors_torch(logits, token_ids, num_prompt_tokens,
                                   allowed_bitmask=allowed_bitmask, **processors)
