"""Calling a ``logprobs`` kernel on a batch in every mode, and summing up the comparisons."""

from __future__ import annotations

import torch

from sampling_harness.report.plots import by_error, pop_plot
from sampling_harness.suites.logprobs.compare import compare
from sampling_harness.suites.logprobs.contract import MODES
from sampling_harness.verdict import Outcome


def on_device(batch: dict, device: torch.device) -> dict:
    return {name: value.to(device) for name, value in batch.items()}


def run_modes(ctx, name: str, batch: dict, twice: bool = False) -> list[dict]:
    """Every mode of one batch, each call validated (and, with ``twice``, called twice
    under two allocator poisons); one comparison record per mode."""
    records = []
    for mode in MODES:
        inputs = {**on_device(batch, ctx.device), "mode": mode}
        call = ctx.runner.call_twice if twice else ctx.runner.call
        values, ranks = call(inputs, ctx.seed)
        records.append({"batch": name, "dtype": str(batch["logits"].dtype).split(".")[-1],
                        **compare(batch, mode, values, ranks)})
    return records


def summarise(records: list[dict], keys: tuple[str, ...], effect: str,
              tme_test: bool = False, mde: float | None = None) -> Outcome:
    """Pass when no record has a failure among ``keys`` (and, with ``tme_test``, every TME
    is within its bound). The smallest deviation detected, for certain, is by default the
    largest tolerance granted to a compared value: any error beyond it fails."""
    plot = pop_plot(records, by_error, lambda r: f"{r['batch']} ({r['dtype']})")
    problems = []
    for r in records:
        if "values" in keys and r["values_wrong"]:
            problems += [f"{r['batch']} ({r['dtype']}) {f}" for f in r["failures"]
                         if "value" in f]
        if "ranks" in keys and r["ranks_wrong"]:
            problems += [f"{r['batch']} ({r['dtype']}) {f}" for f in r["failures"]
                         if "rank" in f]
        if tme_test and "tme" in r and r["tme"] > r["tme_bound"]:
            problems.append(f"{r['batch']} ({r['dtype']}) {r['mode']}: TME {r['tme']:.9g} "
                            f"above its bound {r['tme_bound']:.9g}")
    tokens = sum(r["tokens"] for r in records)
    ambiguous = sum(r["ambiguous"] for r in records)
    tmes = [r["tme"] for r in records if "tme" in r]
    worst = f"; worst TME {max(tmes):.9g}" if tmes else ""
    if problems:
        message = f"{len(problems)} comparisons fail; first: {problems[0]}"
    else:
        message = (f"{tokens:,} requested values in {len(records)} (batch, mode) comparisons "
                   f"agree with float64 ({ambiguous} ambiguous top-k/top-p decisions accepted "
                   f"either way){worst}")
    if mde is None:
        mde = max((r["max_tolerance"] for r in records), default=0.0)
    return Outcome(not problems, message, statistic=max(tmes) if tmes else None,
                   samples=tokens, effect=effect, min_detectable_effect=mde,
                   details={"comparisons": records, "ambiguous": ambiguous,
                            "plot": plot if "values" in keys or tme_test else None})
