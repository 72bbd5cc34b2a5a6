"""Kernels of the ``sample`` family that fault on the GPU on a large batch (more than
``LARGE`` rows: fit_curated's), as kernels under development do: a device-side assert, a
Triton store far out of bounds (an illegal address), a Triton loop that never ends. Their
other calls are a correct race, as ``tests/faulty_kernels.py``'s."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

LARGE = 5000       # rows: fit_curated's batches are larger at smoke; the other checks' smaller


def race(probs, seed):
    """A correct exponential race in float64."""
    generator = torch.Generator(device=probs.device).manual_seed(int(seed))
    noise = torch.empty(probs.shape, dtype=torch.float64, device=probs.device)
    return (probs.double() / noise.exponential_(generator=generator)).argmax(-1)


@triton.jit
def _store_far_out_of_bounds(out_ptr, n, BLOCK: tl.constexpr):
    # writes BLOCK int64 2^40 elements past out: an illegal address
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets + (1 << 40), tl.zeros([BLOCK], tl.int64), mask=offsets < n)


@triton.jit
def _spin(flag_ptr):
    # reads a flag that stays 0 until it is 1: never
    turns = 0
    while tl.load(flag_ptr, volatile=True) == 0:
        turns += 1


def asserts(probs, seed):
    if probs.shape[0] > LARGE:          # gather past the last column: a device-side assert
        past = torch.full((probs.shape[0], 1), probs.shape[1] + 7, device=probs.device)
        probs.gather(1, past)
    return race(probs, seed)


def stores_out_of_bounds(probs, seed):
    ids = race(probs, seed)
    if probs.shape[0] > LARGE:
        _store_far_out_of_bounds[(1,)](ids, ids.numel(), BLOCK=128)
    return ids


def never_ends(probs, seed):
    if probs.shape[0] > LARGE:
        flag = torch.zeros(1, dtype=torch.int32, device=probs.device)
        _spin[(1,)](flag)
    return race(probs, seed)
