"""The processed logits of family ``logits-processors``, in float64.

From logits x [B, V] (float32, bfloat16 or float16, upcast exactly) and a history of token
ids per row (the first P_b the prompt, the rest the output so far, -1 after the end), in
this order:

1. Not-allowed tokens become -inf: tokens whose bit is clear in the allowed bitmask (bit
   t mod 32 of int32 word t // 32, least significant first; no token t >= 32 W is allowed),
   and the stop tokens of a row whose output is shorter than its min_tokens.
2. The logit bias is added: v = x + b (b = 0 for tokens without one).
3. Repetition penalty rho, for every token in the prompt or the output: r = v / rho where
   v > 0, else v * rho; r = v for other tokens.
4. Frequency and presence penalties, from the token's count c in the output alone:
   y = r - phi c - pi [c > 0].

Each step runs in float64 on the exact values given (float32 penalties and biases upcast
exactly), so the reference differs from the exact result by a few float64 roundings, about
2^-52 of the terms, far below any tolerance in use.

A float32 kernel rounds each step once or twice; its error is at most a small multiple of
u = 2^-24 times the magnitudes of the terms that make y: |x|, |b|, |r|, |phi c| and
|pi [c > 0]| (x + b is rounded relative to |v| <= |x| + |b|, the penalty step relative to
|r|, the subtractions relative to their operands). The contract grants 2^-21 = 8 u times the
sum of those magnitudes (``Processed.tolerance``): float32 arithmetic passes in any order,
even where the terms cancel, and bfloat16 or float16 arithmetic (u = 2^-9, 2^-11) does not.
Where y is -inf (masked, or x = -inf) the kernel must give -inf exactly; elsewhere a finite
value.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

BOUND = 2.0 ** -21                 # tolerance per unit of the terms' magnitudes
BOUND_TEXT = ("2^-21 x (|logit| + |bias| + |penalised logit| + |frequency amount| + "
              "|presence amount|)")


@dataclass(frozen=True)
class Processed:
    """The reference of one batch: ``values`` float64 [B, V] (-inf where masked) and
    ``scale`` float64 [B, V], the sum of the magnitudes of the terms of each value."""

    values: torch.Tensor
    scale: torch.Tensor

    @property
    def tolerance(self) -> torch.Tensor:
        """float64 [B, V]: the error the contract grants each value, ``BOUND * scale``."""
        return BOUND * self.scale


def bitmask_allowed(bitmask: torch.Tensor, vocab: int) -> torch.Tensor:
    """bool [B, V]: token t allowed iff bit t mod 32 of word t // 32 is set (the least
    significant bit first); tokens t >= 32 W are never allowed."""
    batch, words = bitmask.shape
    allowed = torch.zeros(batch, vocab, dtype=torch.bool, device=bitmask.device)
    width = min(vocab, 32 * words)
    tokens = torch.arange(width, device=bitmask.device)
    word = bitmask.to(torch.int64)[:, tokens // 32] & 0xFFFFFFFF      # as unsigned 32 bits
    allowed[:, :width] = ((word >> (tokens % 32)) & 1) == 1
    return allowed


def output_lengths(token_ids: torch.Tensor, num_prompt_tokens: torch.Tensor) -> torch.Tensor:
    """int64 [B]: tokens of each row's output so far (ids >= 0 at positions >= P_b)."""
    positions = torch.arange(token_ids.shape[1], device=token_ids.device)
    output = (positions[None, :] >= num_prompt_tokens[:, None]) & (token_ids >= 0)
    return output.sum(dim=1)


def stopped(token_ids: torch.Tensor, num_prompt_tokens: torch.Tensor,
            stop_token_ids: torch.Tensor, min_tokens: torch.Tensor, vocab: int) -> torch.Tensor:
    """bool [B, V]: the stop tokens (ids >= 0) of each row whose output is shorter than its
    min_tokens."""
    early = output_lengths(token_ids, num_prompt_tokens) < min_tokens
    masked = torch.zeros(token_ids.shape[0], vocab, dtype=torch.bool, device=token_ids.device)
    for row in torch.nonzero(early).flatten().tolist():
        ids = stop_token_ids[row]
        masked[row, ids[(ids >= 0) & (ids < vocab)]] = True
    return masked


def allowed_tokens(vocab: int, token_ids: torch.Tensor, num_prompt_tokens: torch.Tensor,
                   allowed_bitmask=None, stop_token_ids=None, min_tokens=None) -> torch.Tensor:
    """bool [B, V]: step 1, the tokens that keep their logit."""
    batch = token_ids.shape[0]
    allowed = torch.ones(batch, vocab, dtype=torch.bool, device=token_ids.device)
    if allowed_bitmask is not None:
        allowed &= bitmask_allowed(allowed_bitmask, vocab)
    if stop_token_ids is not None and min_tokens is not None:
        allowed &= ~stopped(token_ids, num_prompt_tokens, stop_token_ids, min_tokens, vocab)
    return allowed


def biases(vocab: int, batch: int, device, logit_bias_ids=None,
           logit_bias_values=None) -> torch.Tensor:
    """float64 [B, V]: each row's bias per token (0 where it has none; ids -1 are padding)."""
    bias = torch.zeros(batch, vocab, dtype=torch.float64, device=device)
    if logit_bias_ids is None:
        return bias
    for row in range(batch):
        ids, values = logit_bias_ids[row], logit_bias_values[row].to(torch.float64)
        keep = (ids >= 0) & (ids < vocab)
        bias[row, ids[keep]] = values[keep]
    return bias


def history_counts(vocab: int, token_ids: torch.Tensor,
                   num_prompt_tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(seen bool [B, V], output counts int64 [B, V]): whether each token appears in the
    prompt or the output, and how often in the output alone. Padding (-1) counts nowhere."""
    batch, length = token_ids.shape
    seen = torch.zeros(batch, vocab, dtype=torch.bool, device=token_ids.device)
    counts = torch.zeros(batch, vocab, dtype=torch.int64, device=token_ids.device)
    positions = torch.arange(length, device=token_ids.device)
    for row in range(batch):
        ids = token_ids[row]
        real = (ids >= 0) & (ids < vocab)
        seen[row, ids[real]] = True
        output = ids[real & (positions >= num_prompt_tokens[row])]
        counts[row] = torch.bincount(output, minlength=vocab)[:vocab]
    return seen, counts


def process(logits: torch.Tensor, token_ids: torch.Tensor, num_prompt_tokens: torch.Tensor,
            *, repetition_penalty=None, frequency_penalty=None, presence_penalty=None,
            logit_bias_ids=None, logit_bias_values=None, allowed_bitmask=None,
            stop_token_ids=None, min_tokens=None) -> Processed:
    """Steps 1-4 (module docstring) in float64 on the device of ``logits``."""
    batch, vocab = logits.shape
    x = logits.to(torch.float64)
    allowed = allowed_tokens(vocab, token_ids, num_prompt_tokens, allowed_bitmask,
                             stop_token_ids, min_tokens)
    bias = biases(vocab, batch, logits.device, logit_bias_ids, logit_bias_values)
    v = x + bias
    seen, counts = history_counts(vocab, token_ids, num_prompt_tokens)
    r = v
    if repetition_penalty is not None:
        rho = repetition_penalty.to(torch.float64)[:, None]
        r = torch.where(seen, torch.where(v > 0, v / rho, v * rho), v)
    frequency = torch.zeros_like(r)
    if frequency_penalty is not None:
        frequency = frequency_penalty.to(torch.float64)[:, None] * counts
    presence = torch.zeros_like(r)
    if presence_penalty is not None:
        presence = torch.where(counts > 0, presence_penalty.to(torch.float64)[:, None], 0.0)
    values = torch.where(allowed, r - frequency - presence, float("-inf"))
    scale = x.abs() + bias.abs() + r.abs() + frequency.abs() + presence.abs()
    return Processed(values, torch.where(allowed, scale, 0.0))
