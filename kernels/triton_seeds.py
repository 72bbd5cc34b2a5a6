"""Per-request seeds in the project's Triton kernels: one ``seed`` argument, two kinds.

A kernel's ``seed`` argument is either the call's int seed or a pointer to one int64 seed
per row; ``philox_key`` turns it and the row indices into the (key, row) of a Philox counter:

* int seed s: (s, r), the draws of row r keyed by the call's seed and the row, as before;
* per-request seeds: (seeds[r], 0), the draws of row r keyed by its own seed alone, laid
  out as row 0 of a call with that int seed (so a request with seed s draws what a batch
  of that one row draws with int seed s).

Which one is a compile-time fact (the argument's type), so the int path compiles to what it
was. Memory traffic of per-request seeds: one 8-byte load per row (per program and use).
"""

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.request_seeds import fresh_for_unseeded, request_seeds
from sampling_harness.kernels.split_scratch import next_power_of_2


@triton.jit
def philox_key(seed, rows):
    """(key, row) for Philox counters of ``rows`` (any shape): (seed, rows) for an int seed,
    (seeds[rows], 0) for a pointer to per-request seeds (padded: see ``seed_argument``)."""
    if seed.dtype.is_ptr():
        return tl.load(seed + rows), rows * 0
    else:
        return seed, rows


def seed_argument(seed, batch: int, device: torch.device):
    """What a Triton kernel takes as ``seed``: the int itself, or the per-request seeds
    (validated; -1 replaced by a fresh seed) padded to 2 next_power_of_2(B) entries, so that
    the masked-off rows of a partial block (block sizes <= next_power_of_2(B)) read in
    bounds without a mask."""
    seeds = request_seeds(seed, batch, device)
    if seeds is None:
        return seed
    padded = torch.zeros(2 * next_power_of_2(max(batch, 1)), dtype=torch.int64,
                         device=device)
    padded[:batch] = fresh_for_unseeded(seeds)
    return padded
