"""An engine-style sampler and its adapter to the harness's ``sample`` contract.

The engine's function takes its arguments in its own order and one ``torch.Generator`` per
request (a request with a seed of its own), as vLLM's random sampler does; the harness calls
``fn(probs, seed)``. The adapter derives one generator per row from the call's seed.
"""

import torch


def engine_random_sample(generators: dict[int, torch.Generator], probs: torch.Tensor):
    """The engine's sampler: an exponential race, float64 noise drawn per request."""
    noise = torch.empty(probs.shape, dtype=torch.float64, device=probs.device)
    for row, generator in generators.items():
        noise[row].exponential_(generator=generator)
    return probs.to(torch.float64).div_(noise).argmax(dim=-1)


def sample(probs: torch.Tensor, seed: int) -> torch.Tensor:
    """The contract's signature: one generator per row, seeded from (seed, row)."""
    generators = {}
    for row in range(probs.shape[0]):
        generators[row] = torch.Generator(device=probs.device)
        generators[row].manual_seed(seed * 1_000_003 + row)
    return engine_random_sample(generators, probs)
