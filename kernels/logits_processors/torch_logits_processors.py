"""torch-logits-processors: the logits processors as engines write them in torch.

Every step is a dense [B, V] tensor operation, in float32 (the logits upcast first):

1. the allowed bitmask unpacked to a bool [B, V] mask (bit t mod 32 of word t // 32, tokens
   past 32 W not allowed) and applied with ``masked_fill``; the stop tokens of rows still
   under min_tokens scattered into a second mask;
2. the logit bias scattered into a [B, V + 1] tensor (padding, -1, sent to the extra
   column V and dropped) and added;
3. token counts by ``scatter_add`` of ones into [B, V + 1] (padding to column V again): one
   table over the output (frequency, presence), one over prompt and output (repetition);
4. repetition by ``where`` on the sign, then ``x -= phi c + pi [c > 0]``.

Each step is a small function; ``Pieces`` names them, so that a variant (the mutants in
kernels/mutants/logits_processors_mutants.py) swaps one piece and keeps the rest. No host
synchronisation: a call can be captured in a CUDA graph.

Memory traffic: the logits read and the result written by every dense step (about ten
passes over [B, V] float32 when every processor is on), plus two [B, V + 1] count tables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache

import torch

NEG_INF = float("-inf")


def upcast(logits: torch.Tensor) -> torch.Tensor:
    """float32 [B, V]: the logits' exact values, in a fresh tensor."""
    return logits.to(torch.float32, copy=True)


def unpack_bitmask(bitmask: torch.Tensor, vocab: int) -> torch.Tensor:
    """bool [B, V]: bit t mod 32 of int32 word t // 32, least significant first; False for
    tokens t >= 32 W."""
    shifts = torch.arange(32, device=bitmask.device, dtype=torch.int32)
    bits = ((bitmask[:, :, None] >> shifts) & 1).bool().flatten(1)          # [B, 32 W]
    if bits.shape[1] >= vocab:
        return bits[:, :vocab]
    tail = torch.zeros(bits.shape[0], vocab - bits.shape[1], dtype=torch.bool,
                       device=bits.device)
    return torch.cat([bits, tail], dim=1)


def padded_to_extra_column(ids: torch.Tensor, vocab: int) -> torch.Tensor:
    """ids with padding (-1) sent to column V, the extra column of a [B, V + 1] table."""
    return torch.where(ids < 0, vocab, ids)


def output_positions(token_ids: torch.Tensor, num_prompt_tokens: torch.Tensor) -> torch.Tensor:
    """bool [B, L]: positions of the output (>= the row's prompt length)."""
    positions = torch.arange(token_ids.shape[1], device=token_ids.device)
    return positions[None, :] >= num_prompt_tokens[:, None]


def stop_mask(token_ids: torch.Tensor, num_prompt_tokens: torch.Tensor,
              stop_token_ids: torch.Tensor, min_tokens: torch.Tensor, vocab: int,
              still_early: Callable | None = None) -> torch.Tensor:
    """bool [B, V]: the stop tokens of rows whose output is shorter than min_tokens."""
    output = output_positions(token_ids, num_prompt_tokens) & (token_ids >= 0)
    early = (still_early or torch.lt)(output.sum(dim=1), min_tokens)
    mask = torch.zeros(token_ids.shape[0], vocab + 1, dtype=torch.bool,
                       device=token_ids.device)
    mask.scatter_(1, padded_to_extra_column(stop_token_ids, vocab),
                  early[:, None].expand_as(stop_token_ids))
    return mask[:, :vocab]


def bias_table(logit_bias_ids: torch.Tensor, logit_bias_values: torch.Tensor,
               vocab: int) -> torch.Tensor:
    """float32 [B, V]: each row's bias per token, 0 elsewhere."""
    table = torch.zeros(logit_bias_ids.shape[0], vocab + 1, dtype=torch.float32,
                        device=logit_bias_ids.device)
    table.scatter_(1, padded_to_extra_column(logit_bias_ids, vocab),
                   logit_bias_values.to(torch.float32))
    return table[:, :vocab]


def bin_counts(token_ids: torch.Tensor, where: torch.Tensor, vocab: int,
               pad: Callable = padded_to_extra_column) -> torch.Tensor:
    """int32 [B, V]: per row, how often each token appears at the positions ``where``."""
    counts = torch.zeros(token_ids.shape[0], vocab + 1, dtype=torch.int32,
                         device=token_ids.device)
    counts.scatter_add_(1, pad(torch.where(where, token_ids, -1), vocab),
                        torch.ones_like(token_ids, dtype=torch.int32))
    return counts[:, :vocab]


def output_counts(token_ids, num_prompt_tokens, vocab, pad=padded_to_extra_column):
    """int32 [B, V]: counts over the output alone (frequency and presence)."""
    return bin_counts(token_ids, output_positions(token_ids, num_prompt_tokens), vocab, pad)


def seen_tokens(token_ids, num_prompt_tokens, vocab, pad=padded_to_extra_column):
    """bool [B, V]: tokens in the prompt or the output (repetition)."""
    return bin_counts(token_ids, torch.ones_like(token_ids, dtype=torch.bool), vocab, pad) > 0


def repetition(x: torch.Tensor, seen: torch.Tensor, penalty: torch.Tensor) -> torch.Tensor:
    """Seen tokens: a positive logit divided by the penalty, a negative one multiplied."""
    rho = penalty.to(x.dtype)[:, None]
    return torch.where(seen, torch.where(x > 0, x / rho, x * rho), x)


def frequency_presence(x, counts, frequency_penalty, presence_penalty,
                       presence_amount: Callable | None = None):
    """x - phi c - pi [c > 0] (a missing penalty counts 0)."""
    amount = torch.zeros_like(x)
    if frequency_penalty is not None:
        amount = amount + frequency_penalty.to(x.dtype)[:, None] * counts.to(x.dtype)
    if presence_penalty is not None:
        present = (presence_amount or (lambda c: (c > 0)))(counts).to(x.dtype)
        amount = amount + presence_penalty.to(x.dtype)[:, None] * present
    return x - amount


@dataclass(frozen=True)
class Pieces:
    """The steps, each swappable (the mutants swap one)."""

    upcast: Callable = upcast
    unpack_bitmask: Callable = unpack_bitmask
    stop_mask: Callable = stop_mask
    bias_table: Callable = bias_table
    output_counts: Callable = output_counts
    seen_tokens: Callable = seen_tokens
    repetition: Callable = repetition
    frequency_presence: Callable = frequency_presence


def process(pieces: Pieces, logits, token_ids, num_prompt_tokens, repetition_penalty,
            frequency_penalty, presence_penalty, logit_bias_ids, logit_bias_values,
            allowed_bitmask, stop_token_ids, min_tokens) -> torch.Tensor:
    """The four steps in the contract's order, each piece from ``pieces``."""
    x = pieces.upcast(logits)
    vocab = x.shape[1]
    if allowed_bitmask is not None:
        x = x.masked_fill(~pieces.unpack_bitmask(allowed_bitmask, vocab), NEG_INF)
    if stop_token_ids is not None and min_tokens is not None:
        x = x.masked_fill(pieces.stop_mask(token_ids, num_prompt_tokens, stop_token_ids,
                                           min_tokens, vocab), NEG_INF)
    if logit_bias_ids is not None:
        x = x + pieces.bias_table(logit_bias_ids, logit_bias_values, vocab).to(x.dtype)
    if repetition_penalty is not None:
        x = pieces.repetition(x, pieces.seen_tokens(token_ids, num_prompt_tokens, vocab),
                              repetition_penalty)
    if frequency_penalty is not None or presence_penalty is not None:
        counts = pieces.output_counts(token_ids, num_prompt_tokens, vocab)
        x = pieces.frequency_presence(x, counts, frequency_penalty, presence_penalty)
    return x.to(torch.float32)


@cache
def processors(pieces: Pieces = Pieces()) -> Callable:
    """The contract's function over ``pieces``."""
    def fn(logits, token_ids, num_prompt_tokens, *, repetition_penalty=None,
           frequency_penalty=None, presence_penalty=None, logit_bias_ids=None,
           logit_bias_values=None, allowed_bitmask=None, stop_token_ids=None,
           min_tokens=None):
        return process(pieces, logits, token_ids, num_prompt_tokens, repetition_penalty,
                       frequency_penalty, presence_penalty, logit_bias_ids,
                       logit_bias_values, allowed_bitmask, stop_token_ids, min_tokens)
    return fn


def with_pieces(**swapped) -> Callable:
    """The contract's function with some pieces swapped (what a mutant is made of)."""
    return processors(replace(Pieces(), **swapped))


def logits_processors_torch(logits, token_ids, num_prompt_tokens, *, repetition_penalty=None,
                            frequency_penalty=None, presence_penalty=None,
                            logit_bias_ids=None, logit_bias_values=None, allowed_bitmask=None,
                            stop_token_ids=None, min_tokens=None) -> torch.Tensor:
    """Family ``logits-processors``: float32 [B, V], the processed logits (module
    docstring); the logits are left as they were."""
    return processors()(logits, token_ids, num_prompt_tokens,
                        repetition_penalty=repetition_penalty,
                        frequency_penalty=frequency_penalty, presence_penalty=presence_penalty,
                        logit_bias_ids=logit_bias_ids, logit_bias_values=logit_bias_values,
                        allowed_bitmask=allowed_bitmask, stop_token_ids=stop_token_ids,
                        min_tokens=min_tokens)
