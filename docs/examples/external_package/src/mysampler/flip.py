"""The kernel of family ``coin`` (mysampler/coin/): a biased coin per row. A kernel is just
a function: it imports torch, not the harness."""

import torch


def flip(probs: torch.Tensor, seed: int) -> torch.Tensor:
    """Row r comes up heads (1) when its float64 uniform is below probs[r, 1]."""
    generator = torch.Generator(device=probs.device).manual_seed(seed)
    u = torch.rand(probs.shape[0], generator=generator, dtype=torch.float64,
                   device=probs.device)
    return (u < probs[:, 1].double()).long()
