"""Family ``draft-probs``: the cached draft probabilities handed to the rejection sampler.

Contract::

    fn(cached_probs, cached_req_ids, batch_req_ids, num_draft_tokens) -> Tensor | None

cached_probs float32 [R, K, V] or None; cached_req_ids list[str] of length R (distinct);
batch_req_ids list[str] of length B (distinct); num_draft_tokens list[int] of length B, each
in [0, K]. Returns float32 [T, V] on the cache's device, T = sum(num_draft_tokens): for each
batch request in batch order with n > 0 drafts, rows cached_probs[row of that request, :n].
Returns None when the cache is None, when a request with n > 0 drafts is missing from the
cache, or when T = 0. No randomness: the seed the harness holds is not passed.

The validation of every call is structural (None, or float32 [T, V] on the device); the
checks compare every output with the reference (reference/draft_probs.py) exactly.

Read-only inputs: all of them (the cache outlives the call).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sampling_harness.errors import KernelFailure


@dataclass(frozen=True)
class DraftProbsBudget:
    """How many batches the exact checks of family ``draft-probs`` compare."""

    name: str
    generated_batches: int
    max_vocab: int
    power: float = 0.99


BUDGETS = {
    "smoke": DraftProbsBudget("smoke", generated_batches=100, max_vocab=64),
    "quick": DraftProbsBudget("quick", generated_batches=500, max_vocab=64),
    "standard": DraftProbsBudget("standard", generated_batches=2000, max_vocab=1031),
    "thorough": DraftProbsBudget("thorough", generated_batches=20000, max_vocab=4099),
}


def validate_output(output: object, inputs: dict) -> torch.Tensor | None:
    """None, or a float32 [T, V] tensor on the cache's device (T = sum of the counts)."""
    if output is None:
        return None
    cache = inputs["cached_probs"]
    if not isinstance(output, torch.Tensor):
        raise KernelFailure(f"returned {type(output).__name__}, expected a tensor or None")
    if cache is None:
        raise KernelFailure(f"returned a tensor {tuple(output.shape)} for an absent cache "
                            "(None is due)")
    total, vocab = sum(inputs["num_draft_tokens"]), cache.shape[2]
    if output.dtype != torch.float32 or tuple(output.shape) != (total, vocab):
        raise KernelFailure(f"returned {output.dtype} {tuple(output.shape)}, expected "
                            f"torch.float32 ({total}, {vocab})")
    if output.device != cache.device:
        raise KernelFailure(f"returned a tensor on {output.device}, expected {cache.device}")
    return output


def bench_batch(shape: str, device: torch.device) -> dict:
    """``BxKxV``: B cached requests of K drafts, the batch their reverse order, every request
    with K drafts."""
    batch, slots, vocab = (int(x) for x in shape.lower().split("x"))
    ids = [f"req-{i}" for i in range(batch)]
    return {"cached_probs": torch.rand(batch, slots, vocab, device=device),
            "cached_req_ids": ids, "batch_req_ids": ids[::-1],
            "num_draft_tokens": [slots] * batch}
