"""A kernel's processed logits against the float64 reference, exactly up to the contract's
bound, and the outcome of a check from its comparisons.

For every value the reference (reference/logits_processors.py) gives y and the sum of the
magnitudes of its terms s; the kernel's value must be -inf where y is -inf, finite elsewhere
and within 2^-21 s of y (``BOUND_TEXT``, stated in every message, after a failure's values:
the terminal shows a message's first 300 characters). Float32 arithmetic stays
within about 8 units in the last place of the terms, so the bound is a factor of a few
above it; bfloat16 or float16 arithmetic misses it by orders of magnitude. No statistics: a
correct kernel never fails, and any value outside its bound fails the check.
"""

from __future__ import annotations

import torch

from sampling_harness.reference.logits_processors import BOUND_TEXT, process
from sampling_harness.report.plots import by_error, errors_plot, pop_plot
from sampling_harness.suites.logits_processors.batches import Batch, on_device
from sampling_harness.suites.logits_processors.contract import OPTIONS
from sampling_harness.verdict import Outcome
from sampling_harness.words import counted

PLOTTED = 2**18          # values in a comparison's plot at most (a strided subset beyond)


def reference(inputs: dict):
    """The float64 reference of one call's inputs, on their device."""
    return process(inputs["logits"], inputs["token_ids"], inputs["num_prompt_tokens"],
                   **{name: inputs[name] for name in OPTIONS})


def compare(name: str, batch: Batch, inputs: dict, output: torch.Tensor) -> dict:
    """What one call's comparison found: counts, the worst error relative to its bound, and
    the first failure (row, token, label, values) if any."""
    want = reference(inputs)
    got = output.to(torch.float64)
    masked = want.values == float("-inf")
    tolerance = want.tolerance
    with torch.no_grad():
        error = torch.where(masked | ~got.isfinite(), 0.0, (got - want.values).abs())
        not_inf = masked & (got != float("-inf"))
        not_finite = ~masked & ~got.isfinite()
        beyond = ~masked & got.isfinite() & (error > tolerance)
        wrong = not_inf | not_finite | beyond
        ratio = torch.where(tolerance > 0, error / tolerance.clamp(min=1e-300),
                            torch.where(error > 0, float("inf"), 0.0))
    record = {"batch": name, "dtype": batch.dtype, "rows": int(got.shape[0]),
              "values": int(got.numel()), "masked": int(masked.sum()),
              "wrong": int(wrong.sum()), "worst_ratio": float(ratio.max()) if ratio.numel()
              else 0.0, "failure": None}
    if record["wrong"]:
        row, token = (int(i) for i in wrong.nonzero()[0])
        label = batch.labels[row] if row < len(batch.labels) else ""
        what = ("-inf expected" if not_inf[row, token] else "a finite value expected"
                if not_finite[row, token] else f"error {float(error[row, token]):.3g} "
                f"beyond {float(tolerance[row, token]):.3g}")
        record["failure"] = (
            f"{name} ({batch.dtype}), row {row} ({label}), token {token}: "
            f"{float(got[row, token])!r}, reference {float(want.values[row, token])!r}: "
            f"{what} ({counted(record['wrong'], 'value')} wrong)")
    finite = ~masked & got.isfinite()
    step = max(1, int(finite.sum()) // PLOTTED)
    record["plot"] = errors_plot(f"{name} ({batch.dtype})", error[finite][::step].cpu(),
                                 tolerance[finite][::step].cpu())
    return record


def call(ctx, name: str, batch: Batch, twice: bool = False) -> dict:
    """One validated call of the kernel on ``batch`` (with ``twice``, two calls under two
    allocator poisons, the same output due), compared with the reference."""
    inputs = on_device(batch.inputs, ctx.device)
    output = (ctx.runner.call_twice if twice else ctx.runner.call)(inputs, ctx.seed)
    return compare(name, batch, inputs, output)


def summarise(records: list[dict], what: str) -> Outcome:
    """Pass when no comparison has a wrong value; the message states the bound, what was
    compared and the worst error relative to its bound."""
    plot = pop_plot(records, by_error, None)
    failures = [r["failure"] for r in records if r["failure"]]
    values = sum(r["values"] for r in records)
    worst = max((r["worst_ratio"] for r in records), default=0.0)
    bound = f"within {BOUND_TEXT} of the float64 reference, -inf exactly where it is -inf"
    if failures:
        message = (f"{len(failures)} of {len(records)} calls off the contract; first: "
                   f"{failures[0]}; the contract: {bound}")  # the values before the long bound
    else:
        message = (f"{values:,} values of {len(records)} calls ({what}) {bound}; worst error "
                   f"{worst:.3g} of its bound")
    return Outcome(not failures, message, samples=values, statistic=worst,
                   min_detectable_effect=1.0,
                   effect=f"a value beyond its bound ({BOUND_TEXT}) or -inf where the "
                          "reference is finite, or finite where it is -inf (any one fails)",
                   details={"comparisons": records, "plot": plot})
