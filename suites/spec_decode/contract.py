"""Family ``spec-decode``: the runner's proposer step, checked by running a whole engine.

Contract::

    fn(draft_table, context, token_ids, previous_drafts, num_spec_tokens, max_model_len,
       lookahead, seed) -> (drafts, draft_probs)

draft_table float32 [V^C, V]: the draft model's logits for each context of C = ``context``
tokens (engine/toy.py: row index of the last C tokens, left-padded with 0);
token_ids list[list[int]]: each running request's sequence (prompt and output), in batch
order; previous_drafts list[list[int]]: the drafts each request just had verified;
num_spec_tokens K; max_model_len; lookahead: tokens a step still in flight may add (0 under
synchronous scheduling, K + 1 under asynchronous); seed int in [0, 2^31).

Returns drafts, list of R lists: K tokens in [0, V) drawn one after another from softmax of
the draft logits, for a request of length L with L + lookahead + K + 1 <= max_model_len,
and no drafts otherwise (a step verifying K drafts may emit K + 1 tokens); and draft_probs
float32 [R, K, V]: row r, slot i the law draft i of request r was drawn from (its cache for
the rejection sampler; any values where a request has no drafts), or None (no cache).

Every call is validated for its structure; the checks run the engine
(engine/engine.py) with the kernel as its proposer and every other part the
project's own, and judge the engine's output: TME, lengths, its law and its acceptance rate.

Read-only inputs: all of them, the lists of token ids included (they are the engine's
state).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sampling_harness.errors import KernelFailure


@dataclass(frozen=True)
class SpecDecodeBudget:
    """How much the engine runs for the checks of family ``spec-decode``."""

    name: str
    limit_requests: int       # requests run into max_model_len (TME and length checks)
    law_tv: float             # TV of the continuation law detected with ``power``
    acceptance_requests: int  # requests of 24 tokens in the acceptance check
    tail_scales: tuple[float, ...]  # rare draft tokens' probability over the head's (tail)
    tail_expected: float      # expected rare drafts per scale under H0 (tail)
    power: float = 0.99


BUDGETS = {
    "smoke": SpecDecodeBudget("smoke", limit_requests=16, law_tv=0.12,
                              acceptance_requests=32,
                              tail_scales=(1e-2,), tail_expected=50.0),
    "quick": SpecDecodeBudget("quick", limit_requests=64, law_tv=0.05,
                              acceptance_requests=96,
                              tail_scales=(1e-2, 1e-4, 1e-6), tail_expected=100.0),
    "standard": SpecDecodeBudget("standard", limit_requests=1024, law_tv=0.01,
                                 acceptance_requests=4096,
                                 tail_scales=(1e-2, 1e-4, 1e-6, 1e-8), tail_expected=200.0),
    "thorough": SpecDecodeBudget("thorough", limit_requests=8192, law_tv=0.005,
                                 acceptance_requests=32768,
                                 tail_scales=(1e-2, 1e-4, 1e-6, 1e-8, 1e-10),
                                 tail_expected=400.0),
}


def validate_output(output: object, inputs: dict):
    """(drafts, draft_probs): R lists of at most K ids in [0, V); probs None or float32
    [R, K, V] on the table's device."""
    table, sequences, k = inputs["draft_table"], inputs["token_ids"], inputs["num_spec_tokens"]
    vocab = table.shape[1]
    if not isinstance(output, tuple) or len(output) != 2:
        raise KernelFailure(f"returned {type(output).__name__}, expected (drafts, draft_probs)")
    drafts, probs = output
    if not isinstance(drafts, list) or len(drafts) != len(sequences):
        given = len(drafts) if isinstance(drafts, list) else type(drafts).__name__
        raise KernelFailure(f"returned drafts for {given} requests, expected a list of "
                            f"{len(sequences)}")
    for r, d in enumerate(drafts):
        if len(d) > k or any(not 0 <= int(t) < vocab for t in d):
            raise KernelFailure(f"request {r}: drafts {list(d)[:8]} (at most {k} ids in "
                                f"[0, {vocab}) allowed)")
    if probs is not None:
        shape = (len(sequences), k, vocab)
        if not isinstance(probs, torch.Tensor) or probs.dtype != torch.float32 or tuple(
                probs.shape) != shape or probs.device != table.device:
            raise KernelFailure(f"returned draft_probs {getattr(probs, 'dtype', probs)} "
                                f"{tuple(getattr(probs, 'shape', ()))}, expected float32 "
                                f"{shape} on {table.device}")
    return [list(map(int, d)) for d in drafts], probs
