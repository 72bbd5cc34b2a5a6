"""Deliberately wrong kernels of family ``coin``: the family declares them (``Mutant``), with
the checks that must catch them; they need no entry point."""

import torch

from mysampler.flip import flip


def tempered_twice(probs, seed):
    """Temperature 0.5 applied to probs that already had it: p^2 / (p^2 + q^2)."""
    sharpened = probs.double().square()
    return flip((sharpened / sharpened.sum(dim=1, keepdim=True)).float(), seed)


def unseeded(probs, seed):
    """The seed ignored: torch's global generator draws the uniforms."""
    u = torch.rand(probs.shape[0], dtype=torch.float64, device=probs.device)
    return (u < probs[:, 1].double()).long()
