"""Wrong sample-logits kernels, one field bug each (declared with their bugs and catching
checks by each family: suites/<family>/__init__.py).

Each is torch-sample-logits (kernels/sample_logits/torch_sample_logits.py) with one piece
swapped. The filter bugs are the pieces of the logprobs mutants: both families share the
processed distribution, and so do their bugs. All take (logits, temperature, top_k, top_p,
seed).
"""

from __future__ import annotations

import torch

from sampling_harness.kernels.logprobs.torch_logprobs import Pieces as Processing
from sampling_harness.kernels.logprobs.torch_logprobs import top_k_keep, top_p_keep
from sampling_harness.kernels.mutants.logprobs_mutants import (
    scale_twice,
    top_k_exact,
    top_p_inclusive,
)
from sampling_harness.kernels.mutants.sample_mutants import held_floored_noise, held_race
from sampling_harness.kernels.sample_logits.torch_sample_logits import (
    Pieces,
    exponential64,
    min_p_keep,
    sample_logits_with,
)


def _sampled_at_one(x, temperature, sampled):
    """Greedy rows are not special-cased: their temperature 0 is replaced by 1 upstream."""
    return sampled


def greedy_at_temperature_one(logits, temperature, top_k, top_p, seed):
    """Rows with temperature 0 sampled at temperature 1 (the guard 't = 0 -> 1' kept, the
    argmax branch lost)."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed,
                              Pieces(greedy=_sampled_at_one))


def topk_drops_ties(logits, temperature, top_k, top_p, seed):
    """Top-k keeps exactly k tokens: those tied with the k-th largest dropped by index."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed, Pieces(
        processing=Processing(filters=(top_k_exact, top_p_keep))))


def topp_excludes_crossing(logits, temperature, top_k, top_p, seed):
    """Top-p drops the token whose cumulative probability crosses top_p."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed, Pieces(
        processing=Processing(filters=(top_k_keep, top_p_inclusive))))


def topp_before_topk(logits, temperature, top_k, top_p, seed):
    """Top-p applied to the full distribution, then top-k."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed, Pieces(
        processing=Processing(filters=(top_p_keep, top_k_keep))))


def temperature_twice(logits, temperature, top_k, top_p, seed):
    """Logits divided by the temperature twice (once by the model runner, once here)."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed, Pieces(
        processing=Processing(scale=scale_twice)))


def _top_k_plus_one(keys, scaled, keep, top_k, top_p):
    """The boundary read at index k instead of k - 1: k + 1 tokens kept."""
    return top_k_keep(keys, scaled, keep, top_k + (top_k > 0).long(), top_p)


def topk_off_by_one(logits, temperature, top_k, top_p, seed):
    """Top-k keeps x >= the (k+1)-th largest: one masked token can be sampled."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed, Pieces(
        processing=Processing(filters=(_top_k_plus_one, top_p_keep))))


def fp32_noise_floor(logits, temperature, top_k, top_p, seed):
    """Float32 exponential noise: tokens below ~1e-8 of the head never win (the noise and
    the race in held float64 buffers: the same draws, in half the time on the CPU)."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed,
                              Pieces(noise=held_floored_noise, race=held_race))


def _one_row_of_noise(shape, device, seed):
    return exponential64((1, shape[1]), device, seed).expand(shape)


def shared_noise(logits, temperature, top_k, top_p, seed):
    """One noise row broadcast to every row of the batch: identical rows always agree."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed,
                              Pieces(noise=_one_row_of_noise))


def row_shift(logits, temperature, top_k, top_p, seed):
    """Row i sampled from row i-1's logits with row i's settings (an off-by-one row
    pointer)."""
    return sample_logits_with(logits.roll(1, dims=0), temperature, top_k, top_p, seed)


def _min_p_on_logits(keys, scaled, keep, min_p):
    """The min-p threshold taken on the logits as they came, before the temperature."""
    return min_p_keep(keys, keys, keep, min_p)


def min_p_unscaled(logits, temperature, top_k, top_p, seed, min_p=None):
    """min-p against the unscaled logits: the threshold p_i >= min_p * max p judged under
    softmax(x) instead of softmax(x / T); at T < 1 it keeps tokens the scaled distribution
    drops. Field report: engines disagree on the order; llama.cpp's default sampler chain
    (common_params_sampling.samplers) runs min-p before temperature, while vLLM's v1
    sampler applies temperature and then its argmax-invariant min-p processor, the order
    this contract states."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed,
                              Pieces(min_p=_min_p_on_logits), min_p=min_p)


def _min_p_last(filters, min_p_filter):
    return (*filters, min_p_filter)


def min_p_after_top_p(logits, temperature, top_k, top_p, seed, min_p=None):
    """min-p applied after top-p renormalised: top-p's cumulative sum runs over tokens min-p
    would have removed, so it keeps more of the head than vLLM's order (temperature, min-p,
    top-k, top-p). Field report: vLLM's v0 sampler (vllm/model_executor/layers/sampler.py)
    applied top-k and top-p, then min-p; its v1 sampler moved min-p before them, so the two
    engines' laws differ for the same request."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed,
                              Pieces(min_p_order=_min_p_last), min_p=min_p)


def _first_equal_to_max(weights, noise):
    """The race's winner as the first column equal to the row's max score, the index starting
    at -1 (a reduction's initial value): a NaN score equals nothing, so -1 stays."""
    scores = weights / noise
    hit = scores == scores.amax(dim=1, keepdim=True)
    return torch.where(hit.any(dim=1), hit.to(torch.int8).argmax(dim=1), -1)


def _no_sentinel(x, ids):
    return ids


def nan_reaches_argmax(logits, temperature, top_k, top_p, seed, min_p=None):
    """No check for invalid rows: a NaN (or +inf, or all -inf) row's scores are NaN, the
    argmax-by-equality finds no maximum and returns its initial index -1. Field report:
    FlashInfer issue 2402 (a row of NaN logits left the sampled index as garbage and crashed
    a later kernel; FlashInfer then added a ``valid`` output)."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed, Pieces(
        race=_first_equal_to_max, invalid=_no_sentinel), min_p=min_p)


PAD_BLOCK = 128


def padding_wins(logits, temperature, top_k, top_p, seed, min_p=None):
    """The rows padded to a block multiple with 0.0, not -inf, and sampled whole: where the
    logits are log-probabilities (all below 0) the padding outweighs the row and ids >= V
    are returned. Field report: the vLLM security advisory in which padding past the
    vocabulary's end won and returned ids >= V at V = 151936."""
    pad = -logits.shape[1] % PAD_BLOCK
    padded = torch.nn.functional.pad(logits, (0, pad), value=0.0)
    return sample_logits_with(padded, temperature, top_k, top_p, seed, min_p=min_p)


def _bf16_running_sum(sorted_probs: torch.Tensor) -> torch.Tensor:
    """Exclusive prefix sums of [B, V] probabilities through a bfloat16 accumulator, each
    partial sum rounded to bfloat16 (8 significant bits): once the sum passes 1/2, a term
    below 2^-9 rounds away, so the sum stalls below a top_p near 1."""
    acc = torch.zeros(sorted_probs.shape[0], dtype=torch.bfloat16, device=sorted_probs.device)
    before = torch.empty_like(sorted_probs)
    for j in range(sorted_probs.shape[1]):
        before[:, j] = acc.to(sorted_probs.dtype)
        acc = (acc + sorted_probs[:, j].to(torch.bfloat16)).to(torch.bfloat16)
    return before


def _top_p_bf16_cumsum(keys, scaled, keep, top_k, top_p):
    """top_p_keep with the cumulative sum taken in bfloat16."""
    if not bool((top_p < 1).any()):
        return keep
    probs = torch.where(keep, scaled, float("-inf")).softmax(dim=1)
    order = torch.where(keep, keys, float("-inf")).argsort(dim=1, descending=True, stable=True)
    before = _bf16_running_sum(probs.gather(1, order))
    first = torch.arange(keys.shape[1], device=keys.device)[None, :] == 0
    inside = ((before < top_p[:, None]) | first) & keep.gather(1, order)
    cutoff = torch.where(inside, keys.gather(1, order), float("inf")).amin(dim=1)
    return keep & ((top_p >= 1)[:, None] | (keys >= cutoff[:, None]))


def topp_bf16_cumsum(logits, temperature, top_k, top_p, seed, min_p=None):
    """Top-p's cumulative sum accumulated in bfloat16: the running sum stalls once its terms
    fall below half its spacing, never reaches a top_p near 1, and the whole tail stays
    kept. Field report: Megatron-LM issue 7182 (softmax().cumsum() in bf16 saturating near a
    131k vocabulary, so top-p kept the wrong set)."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed, Pieces(
        processing=Processing(filters=(top_k_keep, _top_p_bf16_cumsum))), min_p=min_p)


def _top_p_mixed_iterations(keys, scaled, keep, top_k, top_p):
    """The threshold c of the last search iteration, with the boundary count of the kept
    set, filled in index order from the window [c', c] of the iteration before (c' the next
    lower value): where a token at c' precedes the one at c by index, it takes its place."""
    kept = top_p_keep(keys, scaled, keep, top_k, top_p)
    c = torch.where(kept, keys, float("inf")).amin(dim=1, keepdim=True)
    above = kept & (keys > c)
    boundary = kept.sum(dim=1, keepdim=True) - above.sum(dim=1, keepdim=True)
    lower = torch.where(keep & (keys < c), keys, float("-inf")).amax(dim=1, keepdim=True)
    c_prev = torch.where(torch.isfinite(lower), lower, c)
    window = keep & (keys >= c_prev) & (keys <= c)
    return above | (window & (window.cumsum(dim=1) <= boundary))


def topp_threshold_stale_count(logits, temperature, top_k, top_p, seed, min_p=None):
    """Top-p whose threshold comes from one iteration of its search and whose boundary
    tokens are counted and picked (in index order) over the window of the iteration before:
    a token below the threshold can be kept while one at it is masked. Field report:
    vllm-ascend issue 13847."""
    return sample_logits_with(logits, temperature, top_k, top_p, seed, Pieces(
        processing=Processing(filters=(top_k_keep, _top_p_mixed_iterations))), min_p=min_p)
