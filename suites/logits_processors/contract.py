"""Family ``logits-processors``: what an engine does to the logits before a token is drawn.

Contract::

    fn(logits, token_ids, num_prompt_tokens, *, repetition_penalty=None,
       frequency_penalty=None, presence_penalty=None, logit_bias_ids=None,
       logit_bias_values=None, allowed_bitmask=None, stop_token_ids=None, min_tokens=None)
        -> torch.Tensor   # float32 [B, V], the processed logits

logits float32, bfloat16 or float16 [B, V] on the run's device (the kernel may overwrite
it; V may exceed the tokenizer's vocabulary); token_ids int64 [B, L], -1 after each row's
end, the first num_prompt_tokens[b] (int64 [B]) the prompt, the rest the output so far;
repetition_penalty, frequency_penalty, presence_penalty float32 [B] or None (1, 0 and 0
switch them off); logit_bias_ids int64 [B, NB] (-1 padded, distinct within a row) with
logit_bias_values float32 [B, NB]; allowed_bitmask int32 [B, W] or None: token t allowed
iff bit t mod 32 of word t // 32 is set, no token t >= 32 W allowed (a row of -1 words
allows every token below 32 W); stop_token_ids int64 [B, S] (-1 padded) with min_tokens
int64 [B]: while a row's output is shorter than its min_tokens, its stop tokens are not
allowed.

In this order: not-allowed tokens become -inf; the logit bias is added; every token in the
prompt or the output has a positive logit divided by the repetition penalty and a negative
one multiplied by it; the frequency penalty times the token's count in the output, and the
presence penalty where that count is positive, are subtracted. A value must lie within
2^-21 times the sum of the magnitudes of its terms of the float64 reference
(reference/logits_processors.py), be -inf exactly where the reference is -inf and finite
elsewhere. All inputs but the logits are read-only; a row's result depends on its own
inputs only. No randomness: the seed the harness holds is not passed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sampling_harness.errors import KernelFailure

OPTIONS = ("repetition_penalty", "frequency_penalty", "presence_penalty", "logit_bias_ids",
           "logit_bias_values", "allowed_bitmask", "stop_token_ids", "min_tokens")


@dataclass(frozen=True)
class ProcessorsBudget:
    """How much each check of family ``logits-processors`` compares (every check is exact up
    to the contract's bound: no alpha to spend)."""

    name: str
    curated_vocab: int          # V of the curated rows
    generated_batches: int      # Hypothesis batches in the generated check
    generated_max_vocab: int
    generated_max_history: int
    invariance_trials: int      # base batches of the batch-invariance check
    large_rows: int = 256       # the large-vocabulary batch (GPU only)
    large_vocab: int = 151936
    large_history: int = 2048
    power: float = 0.99


BUDGETS = {
    "smoke": ProcessorsBudget("smoke", curated_vocab=257, generated_batches=4,
                              generated_max_vocab=300, generated_max_history=256,
                              invariance_trials=2),
    "quick": ProcessorsBudget("quick", curated_vocab=257, generated_batches=12,
                              generated_max_vocab=4099, generated_max_history=4096,
                              invariance_trials=6),
    "standard": ProcessorsBudget("standard", curated_vocab=4099, generated_batches=40,
                                 generated_max_vocab=32001, generated_max_history=4096,
                                 invariance_trials=24),
    "thorough": ProcessorsBudget("thorough", curated_vocab=32001, generated_batches=200,
                                 generated_max_vocab=151937, generated_max_history=4096,
                                 invariance_trials=96),
}


def validate_output(output: object, inputs: dict) -> torch.Tensor:
    """The exact check of every output: a float32 tensor [B, V] on the logits' device,
    never NaN or +inf (values and -inf positions are the checks' comparison)."""
    logits = inputs["logits"]
    if not isinstance(output, torch.Tensor):
        raise KernelFailure(f"returned {type(output).__name__}, expected a torch.Tensor")
    if output.dtype != torch.float32 or output.shape != logits.shape:
        raise KernelFailure(f"returned {output.dtype} {tuple(output.shape)}, expected "
                            f"torch.float32 {tuple(logits.shape)}")
    if output.device != logits.device:
        raise KernelFailure(f"returned a tensor on {output.device}, expected {logits.device}")
    bad = output.isnan() | (output == float("inf"))
    if bool(bad.any()):
        row, token = (int(i) for i in bad.nonzero()[0])
        raise KernelFailure(f"value {output[row, token].item()} at row {row}, token {token} "
                            f"({int(bad.sum())} NaN or +inf values)")
    return output


def floor_bytes(inputs: dict) -> int:
    """The fewest bytes a kernel moves: the logits read, the float32 result written, the
    histories, the bitmask and the per-row inputs read once."""
    logits = inputs["logits"]
    read = sum(value.numel() * value.element_size() for name, value in inputs.items()
               if isinstance(value, torch.Tensor))
    return read + 4 * logits.numel()


BENCH_VARIANTS = ("all", "dense")


def bench_batch(shape: str, device: torch.device) -> dict:
    """``BxVxL[:variant]``: float32 logits N(0, 4) as a busy engine step sees them. ``all``
    (the default): every processor on: histories of L tokens (half prompt, the rest output,
    tokens from a Zipf-like law so that many repeat), repetition 1.1, frequency 0.3, presence
    0.2, 8 biased tokens a row, half the rows under a grammar (a bitmask of 32 ceil(V / 32)
    bits, a quarter of them set), 4 stop tokens with min_tokens just above the output length
    on every other row. ``dense``: the bitmask alone (what the sparse processors cost is the
    difference)."""
    dims, _, variant = shape.lower().partition(":")
    batch, vocab, history = (int(x) for x in dims.split("x"))
    if min(batch, vocab, history) < 1 or variant not in ("", *BENCH_VARIANTS):
        raise ValueError(shape)
    ranks = torch.rand(batch, history, device=device).pow(4) * vocab
    words = -(-vocab // 32)
    bitmask = torch.full((batch, words), -1, dtype=torch.int32, device=device)
    grammar = torch.randint(-2**31, 2**31, (batch // 2, words), device=device,
                            dtype=torch.int64)
    grammar &= torch.randint(-2**31, 2**31, grammar.shape, device=device, dtype=torch.int64)
    bitmask[::2][:batch // 2] = grammar.to(torch.int32)
    output = history - history // 2
    full = torch.full((batch,), 1.0, device=device)
    inputs = dict.fromkeys(OPTIONS)
    inputs.update(logits=torch.randn(batch, vocab, device=device) * 2.0,
                  token_ids=ranks.long().clamp(max=vocab - 1),
                  num_prompt_tokens=torch.full((batch,), history // 2, dtype=torch.int64,
                                               device=device),
                  allowed_bitmask=bitmask)
    if variant == "dense":
        return inputs
    inputs.update(repetition_penalty=full * 1.1, frequency_penalty=full * 0.3,
                  presence_penalty=full * 0.2,
                  logit_bias_ids=torch.rand(batch, vocab, device=device).topk(8).indices,
                  logit_bias_values=torch.randn(batch, 8, device=device),
                  stop_token_ids=torch.randint(vocab, (batch, 4), device=device),
                  min_tokens=torch.full((batch,), output, dtype=torch.int64, device=device)
                  + torch.arange(batch, device=device) % 2)
    return inputs
