"""Budgets: how much evidence a run gathers, stated as the effects it must detect.

Sample counts are not set here; each check derives them from these targets, the power and
its share of the false-fail budget (see harness/stats). ``max_call_elements`` only bounds
the memory of one kernel call (B * V), per device type.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import HarnessError


@dataclass(frozen=True)
class Budget:
    name: str
    fit_tv: float                   # total variation (pooled bins) detected with `power`
    fit_max_bins: int               # equal-mass bins at most per row in the fit test
    fit_vocab: int                  # V of the curated batch
    generated_batches: int          # hypothesis-generated batches in the fit check
    generated_max_vocab: int
    large_vocab: int                # V of the large-vocabulary fit batch (GPU only)
    large_tv: float
    tail_scales: tuple[float, ...]  # per-token probability of the rare tokens over the head's
    tail_expected: float            # expected rare wins per scale under H0 (full sample)
    zero_draws: int                 # noise draws on zero-probability tokens (validity)
    pairs: int                      # pairs per pairing in the independence check
    power: float = 0.99


BUDGETS = {
    "quick": Budget("quick", fit_tv=0.02, fit_max_bins=32, fit_vocab=257,
                    generated_batches=2, generated_max_vocab=300,
                    large_vocab=151936, large_tv=0.05,
                    tail_scales=(1e-2, 1e-4, 1e-6), tail_expected=100.0,
                    zero_draws=2**27, pairs=2**13),
    "standard": Budget("standard", fit_tv=0.002, fit_max_bins=32, fit_vocab=1031,
                       generated_batches=3, generated_max_vocab=4096,
                       large_vocab=151936, large_tv=0.01,
                       tail_scales=(1e-2, 1e-4, 1e-6, 1e-8), tail_expected=200.0,
                       zero_draws=2**34, pairs=2**17),
    "thorough": Budget("thorough", fit_tv=0.001, fit_max_bins=32, fit_vocab=1031,
                       generated_batches=6, generated_max_vocab=8192,
                       large_vocab=151936, large_tv=0.005,
                       tail_scales=(1e-2, 1e-4, 1e-6, 1e-8, 1e-10), tail_expected=400.0,
                       zero_draws=2**36, pairs=2**19),
}

MAX_CALL_ELEMENTS = {"cpu": 2**22, "cuda": 2**28}


def get_budget(name: str) -> Budget:
    if name not in BUDGETS:
        raise HarnessError(f"unknown budget {name!r}; known: {', '.join(BUDGETS)}")
    return BUDGETS[name]
