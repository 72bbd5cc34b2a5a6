"""Generated sequences never longer than max_model_len, under synchronous and asynchronous
scheduling (the limit runs of runs.py: every request ends at the limit). Exact: no alpha."""

from __future__ import annotations

from sampling_harness.suites.spec_decode.runs import LIMIT, limit_run
from sampling_harness.verdict import Outcome


def length(ctx) -> Outcome:
    longest, requests = {}, 0
    for scheduling in ("sync", "async"):
        _, run = limit_run(ctx, scheduling)
        longest[scheduling] = max(len(r.tokens) for r in run.requests)
        requests += len(run.requests)
    over = {s: n for s, n in longest.items() if n > LIMIT}
    effect = "sequences longer than max_model_len (any fails)"
    if over:
        return Outcome(False, "sequences past max_model_len " + ", ".join(
            f"{s}: {n} > {LIMIT}" for s, n in over.items()), samples=requests,
            min_detectable_effect=1.0, effect=effect, details=longest)
    return Outcome(True, f"{requests} requests, the longest {max(longest.values())} tokens "
                         f"<= max_model_len {LIMIT}", samples=requests,
                   min_detectable_effect=1.0, effect=effect, details=longest)
