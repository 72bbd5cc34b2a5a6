"""Values, TME and ranks of family ``logprobs`` on curated batches, every mode and dtype.

Curated rows (suites/logprobs/batches.py): Gaussian, exact ties, -inf entries, huge ranges,
peaked, flat; float32, bfloat16 and float16 inputs; temperature 0, 0.7, 1, 1.5; top-k at a
tie, at and around V; top-p at and just under 1, and tiny; requested ids at the argmax, at
tied and masked tokens, padding anywhere. Each value is compared with the float64
reference within the tolerance derived from float32 arithmetic and the conditioning of
log-softmax (suites/logprobs/compare.py); ambiguous top-k / top-p decisions are accepted
either way and counted. Exact checks up to that tolerance: no alpha.

* values: every mode's values within their range;
* tme: TME of the logprob modes within the bound the tolerances give;
* ranks: ranks within the exact range (ties counted with >=), and the consistency
  raw_logprobs = raw_logits - logsumexp of one kernel's two modes.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import logsumexp

from sampling_harness.reference.logprobs import logprob_tolerance
from sampling_harness.suites.logprobs.batches import DTYPES, curated
from sampling_harness.suites.logprobs.runs import on_device, run_modes, summarise
from sampling_harness.verdict import Outcome


def curated_records(ctx) -> list[dict]:
    records = []
    for i, dtype in enumerate(DTYPES):
        batch = curated(ctx.budget.curated_vocab, dtype, ctx.seed + i)
        records += run_modes(ctx, f"curated V={ctx.budget.curated_vocab}", batch)
    if ctx.device.type == "cuda":
        batch = curated(ctx.budget.large_vocab, torch.bfloat16, ctx.seed + 7)
        records += run_modes(ctx, f"curated V={ctx.budget.large_vocab}", batch)
    return records


def values(ctx) -> Outcome:
    return summarise(curated_records(ctx), ("values",),
                     "absolute error of a value beyond its float32 bound (largest bound shown)")


def tme_check(ctx) -> Outcome:
    return summarise(curated_records(ctx), (),
                     "TME above the mean of exp(tolerance) (largest tolerance shown)",
                     tme_test=True)


def consistency(ctx, batch: dict) -> list[str]:
    """raw_logprobs - raw_logits must be -logsumexp of the row, within the tolerance."""
    inputs = on_device(batch, ctx.device)
    lp, _ = ctx.runner.call({**inputs, "mode": "raw_logprobs"}, ctx.seed)
    logits, _ = ctx.runner.call({**inputs, "mode": "raw_logits"}, ctx.seed)
    x = batch["logits"].to(torch.float64).numpy()
    shift = (lp - logits).to("cpu", torch.float64).numpy()
    lse = logsumexp(x, axis=1, keepdims=True)
    ids = batch["token_ids"].numpy()
    tol = np.take_along_axis(logprob_tolerance(torch.float32, x), np.maximum(ids, 0), axis=1)
    finite = (ids >= 0) & np.isfinite(np.take_along_axis(x, np.maximum(ids, 0), axis=1))
    bad = finite & ~(np.abs(shift + lse) <= tol)
    if bad.any():
        row, slot = (int(i) for i in np.argwhere(bad)[0])
        return [f"raw_logprobs - raw_logits = {shift[row, slot]!r} at row {row}, slot {slot}, "
                f"expected -logsumexp = {-lse[row, 0]!r} within {tol[row, slot]:.3g}"]
    return []


def ranks(ctx) -> Outcome:
    records = curated_records(ctx)
    outcome = summarise(records, ("ranks",), "a rank off its exact range by 1 or more",
                        mde=1.0)
    if not any(r["ranks_checked"] for r in records):
        outcome.message = "the kernel returns no ranks (optional): " + outcome.message
    broken = [f for i, dtype in enumerate(DTYPES)
              for f in consistency(ctx, curated(ctx.budget.curated_vocab, dtype, ctx.seed + i))]
    if broken:
        outcome.passed, outcome.message = False, f"modes disagree: {broken[0]}"
    return outcome
