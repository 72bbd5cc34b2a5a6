"""The measured acceptance rate of the engine against its exact expectation.

Requests of 24 tokens (max_model_len 64, K = 3 drafts, synchronous scheduling). For each
verified draft the engine records alpha_i = sum_x min(p(x), q(x)) under the true target and
draft laws of its context: the probability that a correct rejection sampler accepts it,
fixed before the draft is drawn; it equals 1 - TV(p, q). The accepted count minus
sum alpha_i is a martingale; engine/metrics.py tests it with Freedman's inequality
over a dyadic grid of variances (exact level, no normal approximation). The report shows
both rates.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.suites.spec_decode.engine import Request
from sampling_harness.suites.spec_decode.engine.metrics import acceptance_test
from sampling_harness.suites.spec_decode.runs import SPEC, VOCAB, engine
from sampling_harness.verdict import Outcome

TOKENS, MAX_LEN = 24, 64


def acceptance(ctx) -> Outcome:
    rng = np.random.default_rng(ctx.seed)
    requests = [Request(f"req-{i}", [int(t) for t in rng.integers(VOCAB, size=2)], TOKENS)
                for i in range(ctx.budget.acceptance_requests)]
    run = engine(ctx, SPEC, MAX_LEN, "sync", "acceptance").run(requests)
    r = acceptance_test(run.accepted, run.alphas, ctx.alpha, ctx.budget.power)
    passed = r["p_value"] > ctx.alpha
    message = (f"acceptance rate {r['measured']:.4f} measured, {r['expected']:.4f} expected "
               f"(1 - TV(p, q) of each draft's target and draft laws, exact) over "
               f"{r['drafts']} verified drafts (deviation {r['deviation']:+.1f} drafts, "
               f"threshold {r['threshold']:.1f})")
    return Outcome(passed, message, statistic=r["deviation"], p_value=r["p_value"],
                   alpha=ctx.alpha, samples=r["drafts"],
                   min_detectable_effect=r["min_detectable_shift"],
                   effect="shift of the acceptance rate", details=r)
