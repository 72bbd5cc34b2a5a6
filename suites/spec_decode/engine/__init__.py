"""A small speculative-decoding engine (engine.py) over toy models (toy.py), with the
measures its runs are checked by (metrics.py). Its parts are kernels reached by name."""

from __future__ import annotations

from sampling_harness.families.registry import load
from sampling_harness.suites.spec_decode.engine.engine import (
    Engine,
    EngineConfig,
    EngineRun,
    Parts,
    Request,
)
from sampling_harness.suites.spec_decode.engine.toy import ToyModel

DEFAULT_PARTS = {"proposer": ("spec-decode", "torch-proposer"),
                 "handover": ("draft-probs", "torch-draft-probs"),
                 "rejection": ("rejection", "torch-rejection"),
                 "sampler": ("sample-logits", "torch-sample-logits"),
                 "logprobs": ("logprobs", "torch-logprobs-gather")}


def parts(**targets) -> Parts:
    """The engine's parts: each the project's kernel unless a target (a registered name,
    pkg.module:attr or file.py:attr) is given for it, or a callable."""
    chosen = {}
    for part, (family, default) in DEFAULT_PARTS.items():
        given = targets.get(part) or default
        chosen[part] = given if callable(given) else load(given, family).fn
    return Parts(**chosen)


def toy_models(vocab: int = 8, context: int = 2, seed: int = 0) -> tuple[ToyModel, ToyModel]:
    """(target, draft) of the checks: a seeded target and a noisy copy as draft."""
    target = ToyModel.seeded(vocab, context, seed)
    return target, target.drafted(seed + 1)


__all__ = ["Engine", "EngineConfig", "EngineRun", "Parts", "Request", "ToyModel", "parts",
           "toy_models"]
