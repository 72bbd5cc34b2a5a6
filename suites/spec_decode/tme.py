"""TME of the engine's returned logprobs, under synchronous and asynchronous scheduling.

TME = mean over every generated token of exp(|lp - lp_ref|), lp_ref the float64 log-softmax
of the target's row over the final sequence, teacher-forced (engine/metrics.py).
Its threshold is derived from float32, not chosen: the mean over the same tokens of
exp(tol), tol the first-order bound of a float32 log-softmax of that row
(reference/logprobs.py ``logprob_tolerance``): about 1 + 1e-6 for V = 8. A healthy engine
stays under it; a token scored from a row past max_model_len (garbage state) sends it to
e^30. Exact: no alpha.
"""

from __future__ import annotations

from sampling_harness.report.plots import by_error, errors_plot, pop_plot
from sampling_harness.suites.spec_decode.engine.metrics import teacher_forced, tme_and_bound
from sampling_harness.suites.spec_decode.runs import LIMIT, limit_run
from sampling_harness.verdict import Outcome


def errors_figure(target, requests, title: str, value: float, bound: float) -> dict:
    """Plot data of the per-token errors |lp - lp_ref| behind one TME (for the report)."""
    errors, tols = [], []
    for req in requests:
        refs, tol = teacher_forced(target, req.prompt, req.output)
        errors += [abs(a - b) if a != b else 0.0 for a, b in zip(req.logprobs, refs, strict=True)]
        tols += tol
    return errors_plot(title, errors, tols, value, bound)


def tme(ctx) -> Outcome:
    results, plots = {}, {}
    for scheduling in ("sync", "async"):
        eng, run = limit_run(ctx, scheduling)
        value, bound, tokens = tme_and_bound(eng.target, run.requests)
        results[scheduling] = {"tme": value, "bound": bound, "tokens": tokens,
                               "acceptance": run.acceptance_rate, "steps": run.steps}
        plots[scheduling] = errors_figure(eng.target, run.requests, f"{scheduling} scheduling",
                                          value, bound)
    bad = {s: r for s, r in results.items() if not r["tme"] <= r["bound"]}
    text = ", ".join(f"{s}: TME {r['tme']:.9g} (bound {r['bound']:.9g}, {r['tokens']} tokens)"
                     for s, r in results.items())
    return Outcome(not bad, (f"TME above its float32 bound under {', '.join(bad)} scheduling; "
                             if bad else f"max_model_len {LIMIT}: ") + text,
                   statistic=max(r["tme"] for r in results.values()),
                   samples=sum(r["tokens"] for r in results.values()),
                   min_detectable_effect=max(r["bound"] for r in results.values()) - 1.0,
                   effect="TME - 1 above the float32 bound",
                   details={**results, "plot": pop_plot([{"plot": p} for p in plots.values()],
                                                        by_error)})
