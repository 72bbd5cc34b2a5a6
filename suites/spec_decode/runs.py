"""Engine runs for the checks of family ``spec-decode``: the kernel under test is the
proposer, every other part the project's own kernel; the toy models are fixed by the seed.

The limit runs send requests with prompts of 1 to 4 tokens and no max_tokens limit into
max_model_len = 16 with K = 3 drafts per step, under synchronous and asynchronous
scheduling: every request ends by reaching the limit, so every one of them passes through
the steps where the drafter has no room.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.seeds import derive_seed
from sampling_harness.suites.spec_decode.engine import (
    Engine,
    EngineConfig,
    Request,
    parts,
    toy_models,
)

VOCAB, CONTEXT, LIMIT, SPEC = 8, 2, 16, 3


def proposer_of(ctx):
    """The kernel under test as the engine's proposer, every call through the runner."""
    names = [p for p in ctx.family.parameters if p != "seed"]

    def propose(*args):
        *given, seed = args
        return ctx.runner.call(dict(zip(names, given, strict=True)), seed)
    return propose


def engine(ctx, num_spec_tokens: int, max_model_len: int, scheduling: str, tag: str) -> Engine:
    target, draft = toy_models(VOCAB, CONTEXT, ctx.seed)
    config = EngineConfig(num_spec_tokens, max_model_len, scheduling, derive_seed(ctx.seed, tag))
    return Engine(target, draft, config, parts(proposer=proposer_of(ctx)), ctx.device)


def limit_requests(count: int, seed: int) -> list[Request]:
    rng = np.random.default_rng(seed)
    return [Request(f"req-{i}", [int(t) for t in rng.integers(VOCAB, size=rng.integers(1, 5))],
                    max_tokens=10**6) for i in range(count)]


def limit_run(ctx, scheduling: str):
    """(engine, run) of the budget's limit requests under ``scheduling``."""
    eng = engine(ctx, SPEC, LIMIT, scheduling, f"limit-{scheduling}")
    return eng, eng.run(limit_requests(ctx.budget.limit_requests, ctx.seed))
