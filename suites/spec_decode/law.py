"""The output law of the whole engine equals sampling from the target model alone.

Many requests with one prompt generate 3 tokens each, with speculation (K = 2 drafts per
step) and without (K = 0); the counts of the V^3 = 512 continuations are tested against
their exact float64 law (a product of target softmax rows, engine/metrics.py) by a Pearson
chi-square on at most 32 equal-mass bins. The requests per run are planned so that a
total variation of ``budget.law_tv`` on those bins is detected with ``budget.power``.
Alpha: the check's share over the two runs.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.checks.fits import fit_verdict
from sampling_harness.report.plots import counts_plot
from sampling_harness.stats.chisquare import planned_samples
from sampling_harness.stats.fit import chisquare_fit
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.suites.spec_decode.engine import Request
from sampling_harness.suites.spec_decode.engine.metrics import continuation_law, outcome_index
from sampling_harness.suites.spec_decode.runs import VOCAB, engine
from sampling_harness.verdict import Outcome

PROMPT, LENGTH, MAX_BINS = [1, 2], 3, 32


def law(ctx) -> Outcome:
    alpha = bonferroni(ctx.alpha, 2)
    results = []
    for spec in (2, 0):
        eng = engine(ctx, spec, 64, "sync", f"law-{spec}")
        expected = continuation_law(eng.target, PROMPT, LENGTH)
        n = planned_samples([expected], ctx.budget.law_tv, alpha, ctx.budget.power, MAX_BINS)
        run = eng.run([Request(f"req-{i}", list(PROMPT), LENGTH) for i in range(n)])
        counts = np.bincount([outcome_index(r.output, VOCAB) for r in run.requests],
                             minlength=expected.size)
        fit = chisquare_fit(counts, expected, alpha, ctx.budget.power, MAX_BINS)
        results.append({"num_spec_tokens": spec, "requests": n, "statistic": fit.statistic,
                        "df": fit.df, "p_value": fit.p_value,
                        "acceptance": run.acceptance_rate,
                        "min_detectable_tv": fit.min_detectable_tv,
                        "plot": counts_plot(f"K={spec}: 3-token continuations", counts,
                                            expected, fit.labels, fit.p_value, fit.statistic,
                                            fit.df, "continuation")})

    def message(failed: list[dict], worst: dict) -> str:
        return (("the engine's continuations differ from the target's law: " if failed
                 else "continuations follow the target's law: ")
                + "; ".join(f"K={r['num_spec_tokens']}: chi2 {r['statistic']:.1f} on "
                            f"{r['df']} df, p = {r['p_value']:.2g}" for r in results))

    return fit_verdict(ctx, results, alpha, message,
                       samples=sum(r["requests"] for r in results),
                       min_detectable_effect=max(r["min_detectable_tv"] for r in results),
                       effect=f"total variation of 3-token continuations on <= {MAX_BINS} "
                              f"bins", key="runs")
