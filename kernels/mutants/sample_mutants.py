"""Wrong sampling kernels, one field bug each (registered in pyproject.toml)."""

import time

import torch
from sampling_harness.kernels.meta import mutant
from sampling_harness.kernels.sample.torch_race import seeded_generator


def _race64(probs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    return probs.to(torch.float64).div_(noise).argmax(dim=-1)


def _exp64(probs: torch.Tensor, seed: int, rows: int | None = None) -> torch.Tensor:
    shape = (probs.shape[0] if rows is None else rows, probs.shape[1])
    noise = torch.empty(shape, dtype=torch.float64, device=probs.device)
    return noise.exponential_(generator=seeded_generator(probs.device, seed))


@mutant(("tail",), "standard",
        bug="float32 exponential noise floored at 2^-24: rare tokens far below the head never win")
def noise_floor(probs, seed):
    """q = -log(u) with u a 24-bit uniform (midpoints of 2^-24 cells): q >= 3e-8, as CUDA's
    float32 ``exponential_`` (q >= 2^-24); on CPU torch's own float32 noise has no floor."""
    u = torch.rand(probs.shape, generator=seeded_generator(probs.device, seed), device=probs.device)
    noise = u.to(torch.float64).add_(2.0**-25).log_().neg_()
    return _race64(probs, noise)


@mutant(("tail",), "quick",
        bug="a fast path races only the top 1024 tokens: the long tail is never sampled")
def topk_truncated(probs, seed, k=1024):
    top = probs.topk(min(k, probs.shape[1]), dim=-1)
    noise = _exp64(top.values, seed)
    return top.indices.gather(1, _race64(top.values, noise)[:, None]).squeeze(1)


@mutant(("validity",), "quick",
        bug="uniform drawn in (0, 1]: u = 1 gives infinite Gumbel noise, -inf + inf = NaN wins the "
            "argmax on a masked token")
def gumbel_u_one(probs, seed):
    u = 1.0 - torch.rand(probs.shape, generator=seeded_generator(probs.device, seed),
                         device=probs.device)
    gumbel = -torch.log(-torch.log(u))
    return (probs.log() + gumbel).argmax(dim=-1)


@mutant(("validity",), "quick",
        bug="probs clamped to float32 eps 'to avoid log(0)': zero-probability tokens get sampled")
def clamped_probs(probs, seed):
    return _race64(probs.clamp_min(torch.finfo(torch.float32).eps), _exp64(probs, seed))


@mutant(("validity",), "quick",
        bug="the seed is ignored and the global generator used: the same (probs, seed) gives "
            "different ids")
def unseeded(probs, seed):
    noise = torch.empty(probs.shape, dtype=torch.float64, device=probs.device).exponential_()
    return _race64(probs, noise)


@mutant(("validity",), "quick",
        bug="argmax(keepdim=True): ids of shape [B, 1]")
def keepdim_ids(probs, seed):
    return _race64(probs, _exp64(probs, seed)).unsqueeze(1)


@mutant(("independence",), "quick",
        bug="one noise vector broadcast to every row: identical rows always agree")
def shared_noise(probs, seed):
    return _race64(probs, _exp64(probs, seed, rows=1))


@mutant(("independence",), "quick",
        bug="Philox stream chosen as seed + row: row i+1 of seed s repeats row i of seed s+1")
def seed_row_overlap(probs, seed):
    rows = [_exp64(probs[:1], seed + row) for row in range(probs.shape[0])]
    return _race64(probs, torch.cat(rows))


@mutant(("fit_curated", "fit_generated", "fit_large_vocab"), "quick",
        bug="softmax applied to probs as if they were logits")
def double_softmax(probs, seed):
    flattened = probs.softmax(dim=-1) * (probs > 0)  # masked tokens stay masked
    return _race64(flattened, _exp64(probs, seed))


@mutant(("fit_curated",), "quick",
        bug="row i sampled from row i-1's probs (an off-by-one row pointer)")
def row_shift(probs, seed):
    return _race64(probs.roll(1, dims=0), _exp64(probs, seed))


@mutant(("validity",), "quick",
        bug="the kernel raises (an illegal memory access)")
def raises(probs, seed):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


@mutant(("validity",), "quick", call_timeout=2.0,
        bug="the kernel never returns")
def hangs(probs, seed):
    time.sleep(3600)
