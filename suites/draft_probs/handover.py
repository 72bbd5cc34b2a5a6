"""Comparing a ``draft-probs`` kernel with the reference, batch by batch, exactly.

Each batch is called twice under two allocator poisons (an unwritten row differs between
the calls); the output must be None exactly where the reference says None, and otherwise
equal to the reference's rows bit for bit (a copy, so no rounding is allowed).
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.reference.draft_probs import handed_over


def on_device(batch: dict, device) -> dict:
    probs = batch["cached_probs"]
    return {**batch, "cached_probs": None if probs is None else probs.to(device)}


def describe(batch: dict) -> str:
    probs = batch["cached_probs"]
    shape = "None" if probs is None else "x".join(map(str, probs.shape))
    return (f"cache {shape} of {batch['cached_req_ids']}, batch {batch['batch_req_ids']} with "
            f"drafts {batch['num_draft_tokens']}")


def mismatch(ctx, batch: dict, seed: int) -> str | None:
    """None when the kernel hands over what the reference does; else what differs."""
    got = ctx.runner.call_twice(on_device(batch, ctx.device), seed)
    due = handed_over(batch["cached_probs"], batch["cached_req_ids"], batch["batch_req_ids"],
                      batch["num_draft_tokens"])
    if due is None or got is None:
        if (due is None) != (got is None):
            said = "None" if got is None else f"a tensor {tuple(got.shape)}"
            return f"returned {said} where {'None' if due is None else 'rows'} are due"
        return None
    got = got.cpu().numpy()
    if got.shape != due.shape:
        return f"returned shape {got.shape}, expected {due.shape}"
    wrong = np.flatnonzero(~(got == due).all(axis=1))
    if wrong.size:
        return (f"row {int(wrong[0])} of {due.shape[0]} is not the cached row due there "
                f"({wrong.size} rows wrong)")
    return None


def curated_batches(seed: int) -> dict[str, dict]:
    """One batch per rule of the contract."""
    rng = np.random.default_rng(seed)
    probs = torch.as_tensor(rng.random((4, 3, 11)).astype(np.float32))
    ids = ["a", "b", "c", "d"]
    return {
        "same order": dict(cached_probs=probs, cached_req_ids=ids, batch_req_ids=ids,
                           num_draft_tokens=[3, 3, 3, 3]),
        "reordered": dict(cached_probs=probs, cached_req_ids=ids,
                          batch_req_ids=["c", "a", "d", "b"], num_draft_tokens=[2, 3, 1, 3]),
        "zero drafts first, middle and last": dict(
            cached_probs=probs, cached_req_ids=ids, batch_req_ids=["b", "d", "a", "c"],
            num_draft_tokens=[0, 2, 0, 0]),
        "fewer drafts than cached": dict(cached_probs=probs, cached_req_ids=ids,
                                         batch_req_ids=["d", "c"], num_draft_tokens=[1, 2]),
        "a new request with drafts (None)": dict(
            cached_probs=probs, cached_req_ids=ids, batch_req_ids=["a", "new"],
            num_draft_tokens=[2, 1]),
        "a new request without drafts": dict(
            cached_probs=probs, cached_req_ids=ids, batch_req_ids=["new", "c"],
            num_draft_tokens=[0, 3]),
        "no drafts at all (None)": dict(cached_probs=probs, cached_req_ids=ids,
                                        batch_req_ids=["a", "b"], num_draft_tokens=[0, 0]),
        "empty batch (None)": dict(cached_probs=probs, cached_req_ids=ids, batch_req_ids=[],
                                   num_draft_tokens=[]),
        "no cache (None)": dict(cached_probs=None, cached_req_ids=[],
                                batch_req_ids=["a"], num_draft_tokens=[2]),
    }
