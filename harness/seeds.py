"""The seed of a kernel call: one int per call, or one int64 per request.

Families sample, sample-logits and rejection take ``seed`` as an int in [0, 2^31); a kernel
whose metadata (kernels/meta.py) says ``"seeds": "per-request"`` also takes an int64 [B]
tensor on the inputs' device, one seed per request in [0, 2^31), or -1 for an unseeded
request. What a seed determines is each family's contract (harness/families/<name>.py).

Where seeds come from: every check's seed is ``derive_seed(harness seed, family, check)``, a
pure function of its parts, and its kernel calls take the seeds of ``seed_stream(check
seed)`` in turn (a rank of a sharded run: its own stream, ``Shard.seed``); so a run is
reproduced from the harness seed alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

import numpy as np
import torch

PER_REQUEST = "per-request"
PER_CALL = "per-call"
UNSEEDED = -1
SKIPPED = "skipped: the kernel takes one seed per call"


def derive_seed(*parts: object) -> int:
    """A 31-bit seed that is a pure function of ``parts`` (stable across runs and machines)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF


def seed_stream(seed: int) -> Iterator[int]:
    """Independent-looking 31-bit call seeds, reproducible from one check seed."""
    rng = np.random.default_rng(seed)
    while True:
        yield int(rng.integers(0, 2**31 - 1))


def takes_request_seeds(meta: dict) -> bool:
    """Whether a kernel's metadata (``registry.role_of``) declares per-request seeds."""
    return meta.get("seeds", PER_CALL) == PER_REQUEST


def request_seeds(seeds: Sequence[int], device: torch.device) -> torch.Tensor:
    """The per-request seed tensor of a call: int64 [B] on ``device``."""
    return torch.tensor(list(seeds), dtype=torch.int64, device=device)


def described(seed) -> str:
    """'seed 12', or 'per-request seeds [3, -1, ...]' (the first eight), for messages."""
    if not isinstance(seed, torch.Tensor):
        return f"seed {seed}"
    values = seed.tolist()
    shown = ", ".join(str(v) for v in values[:8]) + (", ..." if len(values) > 8 else "")
    return f"per-request seeds [{shown}]"
