"""Kernels whose draws depend on the batch, one field bug each (declared with their bugs and
catching checks by each family: suites/<family>/__init__.py).

Each is a clean torch kernel (torch-fp64 in ``sample``, torch-sample-logits, torch-rejection)
with its noise keyed wrongly; every law and every single call stays right, so only the
batch_invariance check sees them. The issue they re-create: a seeded request stops
reproducing when its batch changes (vLLM issue 51226, PR 51866; vLLM issue 17524; the
batch-invariant inference measurement of 80 distinct completions in 1,000 runs of one prompt).
"""

from __future__ import annotations

import torch

from sampling_harness.kernels.meta import per_request_seeds
from sampling_harness.kernels.rejection.torch_rejection import Pieces as RejectionPieces
from sampling_harness.kernels.rejection.torch_rejection import rejection_sample
from sampling_harness.kernels.request_seeds import UNSEEDED, request_seeds, row_generators
from sampling_harness.kernels.sample.torch_race import exponential_noise, seeded_generator
from sampling_harness.kernels.sample_logits.torch_sample_logits import Pieces as LogitsPieces
from sampling_harness.kernels.sample_logits.torch_sample_logits import (
    exponential64,
    sample_logits_with,
)


def _race64(probs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    return probs.to(torch.float64).div_(noise).argmax(dim=-1)


@per_request_seeds
def batch_size_stream(probs, seed):
    """torch-fp64 whose generator is seeded with seed + B (per-request seeds: s_r + B)."""
    batch = probs.shape[0]
    seeds = request_seeds(seed, batch, probs.device)
    shifted = seed + batch if seeds is None else \
        torch.where(seeds == UNSEEDED, seeds, (seeds + batch) % 2**31)
    return _race64(probs, exponential_noise(probs.shape, torch.float64, probs.device, shifted))


@per_request_seeds
def content_sorted_rows(probs, seed):
    """torch-fp64 on the rows sorted by their max probability (a stable sort): the sorted
    row of rank k races with noise row k (per-request seeds: the k-th seed of the batch)."""
    order = probs.amax(dim=1).argsort(stable=True)
    noise = exponential_noise(probs.shape, torch.float64, probs.device, seed)
    ids = torch.empty(probs.shape[0], dtype=torch.int64, device=probs.device)
    ids[order] = _race64(probs[order], noise)
    return ids


def _fast_path_noise(shape, device: torch.device, seed, dtype=torch.float64) -> torch.Tensor:
    """Per-request noise only when every request is seeded; if any is unseeded, the whole
    batch takes the unseeded fast path (torch's default generator), the seeded requests'
    generators discarded."""
    seeds = request_seeds(seed, shape[0], device)
    if seeds is not None and bool((seeds == UNSEEDED).any()):
        return torch.empty(shape, dtype=dtype, device=device).exponential_()
    return exponential_noise(shape, dtype, device, seed)


@per_request_seeds
def unseeded_fast_path(probs, seed):
    """torch-fp64 whose noise ignores every per-request seed as soon as one is -1."""
    return _race64(probs, _fast_path_noise(probs.shape, probs.device, seed))


@per_request_seeds
def unseeded_fast_path_logits(logits, temperature, top_k, top_p, seed):
    """torch-sample-logits whose noise ignores every per-request seed as soon as one is -1."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed,
                              LogitsPieces(noise=_fast_path_noise))


def _top_k_sorted_noise(shape, device, seed, order):
    """exponential64 noise whose row k serves the row of rank k in ``order``."""
    noise = exponential64(shape, device, seed)
    out = torch.empty_like(noise)
    out[order] = noise
    return out


@per_request_seeds
def top_k_sorted_rows(logits, temperature, top_k, top_p, seed):
    """torch-sample-logits whose row of rank k (rows sorted by top-k) races noise row k."""
    order = top_k.argsort(stable=True)
    return sample_logits_with(logits, temperature, top_k, top_p, seed, LogitsPieces(
        noise=lambda shape, device, s: _top_k_sorted_noise(shape, device, s, order)))


def _one_generator(seed, layout, device: torch.device):
    """torch-rejection's draws from one generator for the batch (per-request seeds: the
    first seeded request's): the uniforms of every draft row in flat order, then the noise of
    every rejecting request's residual row after them."""
    seeds = request_seeds(seed, layout.counts.numel(), device)
    if seeds is not None:
        seeded = [g for g in row_generators(seeds) if g is not None]
        generator = seeded[0] if seeded else None
    else:
        generator = seeded_generator(device, seed)
    total = int(layout.counts.sum())
    uniform = torch.rand(total, dtype=torch.float64, device=device, generator=generator)
    return uniform, lambda requests, weights: torch.empty_like(
        weights, dtype=torch.float64).exponential_(generator=generator)


@per_request_seeds
def shared_generator(drafts, counts, draft_probs, target_probs, bonus, greedy, seed):
    """torch-rejection drawing every request's uniforms, then every residual's noise, from
    one generator in batch order."""
    return rejection_sample(drafts, counts, draft_probs, target_probs, bonus, greedy, seed,
                            pieces=RejectionPieces(draws=_one_generator))


@per_request_seeds
def request_seeds_dropped(probs, seed):
    """torch-fp64 (int seeds right) whose per-request rows all draw from seed 0's generator."""
    if isinstance(seed, torch.Tensor):
        request_seeds(seed, probs.shape[0], probs.device)
        seed = torch.zeros_like(seed)
    return _race64(probs, exponential_noise(probs.shape, torch.float64, probs.device, seed))
