"""Hypothesis strategies for family ``draft-probs``: caches and the batches that read them.

Composed from small named pieces: request ids (distinct), a cache of R requests with K
drafts each (or none), and a batch that reorders cached requests, adds new ones the cache
has never seen, and gives any of them zero drafts. A batch is a dict of the contract's
inputs on the CPU.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st

from sampling_harness.strategies.probs import row_seeds


def request_ids(count: int, prefix: str = "req") -> st.SearchStrategy[list[str]]:
    """``count`` distinct ids, in no particular order."""
    return st.permutations([f"{prefix}-{i}" for i in range(count)])


def draft_counts(size: int, slots: int) -> st.SearchStrategy[list[int]]:
    """Per request 0..K drafts, zeros anywhere (as likely as not); sometimes all zero
    (T = 0)."""
    count = st.one_of(st.integers(1, slots), st.just(0))
    return st.one_of(st.lists(count, min_size=size, max_size=size), st.just([0] * size))


@st.composite
def cached_probs(draw, requests: int, slots: int, vocab: int) -> torch.Tensor:
    """float32 [R, K, V] rows of distinct random laws (every row tells its origin apart)."""
    rng = draw(row_seeds())
    probs = rng.random((requests, slots, vocab)).astype(np.float32) + 1e-3
    return torch.as_tensor(probs / probs.sum(axis=2, keepdims=True))


def batch_of(cached: list[str]) -> st.SearchStrategy[list[str]]:
    """A reordered, non-empty subset of the cached requests, and at times up to two new
    requests the cache has never seen."""
    kept = st.lists(st.sampled_from(cached), unique=True, min_size=1)
    fresh = st.lists(st.sampled_from([f"new-{i}" for i in range(3)]), unique=True, max_size=2)
    return st.tuples(kept, fresh).map(lambda parts: parts[0] + parts[1]).flatmap(
        st.permutations)


SHAPES = ("typical",) * 8 + ("empty batch", "no cache")


@st.composite
def handover_batches(draw, max_vocab: int) -> dict:
    """A cache of R = 1..6 requests with K = 1..8 drafts each, and a batch that reads it: a
    reordered subset of the cached requests plus new ones (R != B in general). One time in
    ten the batch is empty, one in ten there is no cache (None, R = 0)."""
    shape = draw(st.sampled_from(SHAPES))
    slots, vocab = draw(st.integers(1, 8)), draw(st.integers(1, max_vocab))
    cached = draw(request_ids(draw(st.integers(1, 6))))
    batch = [] if shape == "empty batch" else draw(batch_of(cached))
    if shape == "no cache":
        probs, cached = None, []
    else:
        probs = draw(cached_probs(len(cached), slots, vocab))
    return {"cached_probs": probs, "cached_req_ids": cached, "batch_req_ids": list(batch),
            "num_draft_tokens": draw(draft_counts(len(batch), slots))}
