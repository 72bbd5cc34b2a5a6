"""Family ``logprobs``: the value (and rank) of requested token ids, in four modes.

Contract::

    fn(logits, token_ids, mode, temperature, top_k, top_p) -> values | (values, ranks)

logits float32, bfloat16 or float16 [B, V]; token_ids int64 [B, K], -1 marks padding; mode
"raw_logprobs" | "raw_logits" | "processed_logprobs" | "processed_logits"; temperature
float32 [B], top_k int64 [B], top_p float32 [B]. values float32 [B, K], the value of each
token id in the mode, -inf at padding; ranks (optional) int64 [B, K], the number of
vocabulary entries whose value in the mode is >= the token's value (not checked at
padding). Processed logits: logits / temperature (temperature 0: unscaled), then top-k
(ties at the boundary kept; k <= 0 or k >= V disables), then top-p on the renormalised
result (the smallest most-probable set reaching top_p; top_p >= 1 disables); masked
entries -inf. No randomness: the seed the harness holds is not passed.

Read-only inputs: all of them. The engine samples from the same logits after gathering
logprobs, so a kernel that scales or normalises them in place corrupts the draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sampling_harness.errors import KernelFailure

MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")


@dataclass(frozen=True)
class LogprobsBudget:
    """How many batches the checks of family ``logprobs`` compare (all checks are exact up
    to a tolerance derived from the input dtype: there is no alpha to spend)."""

    name: str
    curated_vocab: int          # V of the curated rows
    generated_batches: int      # Hypothesis batches in the generated check
    generated_max_vocab: int
    large_vocab: int            # V of the large-vocabulary rows (GPU only)
    power: float = 0.99


BUDGETS = {
    "smoke": LogprobsBudget("smoke", curated_vocab=257, generated_batches=2,
                            generated_max_vocab=100, large_vocab=151936),
    "quick": LogprobsBudget("quick", curated_vocab=257, generated_batches=8,
                            generated_max_vocab=300, large_vocab=151936),
    "standard": LogprobsBudget("standard", curated_vocab=4099, generated_batches=40,
                               generated_max_vocab=4099, large_vocab=151936),
    "thorough": LogprobsBudget("thorough", curated_vocab=32001, generated_batches=200,
                               generated_max_vocab=32001, large_vocab=151936),
}


def validate_output(output: object, inputs: dict) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Check a ``logprobs`` kernel's output exactly; return (values, ranks or None).

    values: a float32 tensor [B, K] on the device, -inf exactly at every padding slot, never
    NaN, never +inf; ranks, when returned: int64 [B, K] on the device, in [1, V] wherever
    the token is not padding."""
    token_ids = inputs["token_ids"]
    batch, slots = token_ids.shape
    vocab = inputs["logits"].shape[1]
    values, ranks = output if isinstance(output, tuple) else (output, None)
    if isinstance(output, tuple) and len(output) != 2:
        raise KernelFailure(f"returned a tuple of {len(output)}, expected (values, ranks)")
    for name, tensor, dtype in (("values", values, torch.float32), ("ranks", ranks, torch.int64)):
        if tensor is None and name == "ranks":
            continue
        if not isinstance(tensor, torch.Tensor):
            raise KernelFailure(f"returned {name} as {type(tensor).__name__}, expected a tensor")
        if tensor.dtype != dtype or tuple(tensor.shape) != (batch, slots):
            raise KernelFailure(f"returned {name} {tensor.dtype} {tuple(tensor.shape)}, "
                                f"expected {dtype} ({batch}, {slots})")
        if tensor.device != token_ids.device:
            raise KernelFailure(f"returned {name} on {tensor.device}, expected "
                                f"{token_ids.device}")
    padding = token_ids < 0
    wrong = padding & (values != float("-inf"))
    if bool(wrong.any()):
        row, slot = (int(i) for i in wrong.nonzero()[0])
        raise KernelFailure(f"padding at row {row}, slot {slot} holds {values[row, slot].item()}"
                            f", not -inf ({int(wrong.sum())} padding slots wrong)")
    bad = values.isnan() | (values == float("inf"))
    if bool(bad.any()):
        row, slot = (int(i) for i in bad.nonzero()[0])
        raise KernelFailure(f"value {values[row, slot].item()} at row {row}, slot {slot}")
    if ranks is not None:
        out = ~padding & ((ranks < 1) | (ranks > vocab))
        if bool(out.any()):
            row, slot = (int(i) for i in out.nonzero()[0])
            raise KernelFailure(f"rank {int(ranks[row, slot])} at row {row}, slot {slot}, "
                                f"outside [1, {vocab}]")
    return values, ranks


BENCH_IDS = ("top", "random")


def bench_batch(shape: str, device: torch.device) -> dict:
    """``BxVxK[:ids]``: float32 logits N(0, 4), raw_logprobs, with requested ids ``top``: one
    id sampled from the row's softmax, then its K - 1 largest logits (what engines ask for:
    the sampled token and the top 20 at K = 21, vLLM's order), or ``random`` (the default):
    K uniform ids. Ranking kernels that prune by the ids' values meet their best case in
    ``top`` and their worst in ``random``."""
    dims, _, ids = shape.lower().partition(":")
    batch, vocab, slots = (int(x) for x in dims.split("x"))
    if ids not in ("", *BENCH_IDS) or (ids == "top" and not 0 < slots <= vocab + 1):
        raise ValueError(shape)
    logits = torch.randn(batch, vocab, device=device) * 2.0
    if ids == "top":
        sampled = torch.multinomial(torch.softmax(logits, dim=1), 1)
        token_ids = torch.cat([sampled, logits.topk(slots - 1, dim=1).indices], dim=1)
    else:
        token_ids = torch.randint(vocab, (batch, slots), device=device)
    return {"logits": logits,
            "token_ids": token_ids,
            "mode": "raw_logprobs",
            "temperature": torch.ones(batch, device=device),
            "top_k": torch.zeros(batch, dtype=torch.int64, device=device),
            "top_p": torch.ones(batch, device=device)}
