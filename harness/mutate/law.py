"""The law of a survivor's draws: a two-sample chi-square test of homogeneity.

A mutant of a sampler that only re-keys its random stream (another chunk width, another
Philox counter layout, another range of fresh seeds, another constant of a per-row seed
hash) gives other tokens on the same seed, drawn from the same law. The differential
(harness/mutate/recorder.py) sees its outputs differ; this module asks whether its *law*
differs, at the first call whose output differs: the original kernel and the mutant are each
called ``M`` times on that call's inputs with fresh, distinct seeds, and the two samples are
compared row by row.

Which calls are draws (``not_draws``; the recorder files the law of the others with the
verdict "values"): the family's contract takes a ``seed`` (sample, sample-logits, rejection,
spec-decode, tree-rejection; not logprobs, logits-processors, draft-probs, whose outputs are
values), and every output part that differs holds integer ids (an int32/int64 tensor, or
lists of ids like spec-decode's drafts); every other part (a float tensor, None) must be
identical, or the difference is one of values.

One outcome per row (``outcome_rows``): a row of the output (all its integer parts side by
side, a list of ids padded with -1) is one categorical outcome, the tuple of its tokens. For
rejection and tree-rejection a row is the whole emitted sequence (tokens then -1), so the
test is of the joint law of a request's tokens: the columns of one row are dependent, so
per-column statistics could not be summed as independent chi-squares.

The test and its power (``homogeneity``, harness/mutate/homogeneity.py): a two-sample
chi-square of homogeneity per row, summed over rows, at ``ALPHA`` = 1e-3, with the
smallest total variation it detects with power 0.99, ``detectable_tv``.

The draws follow the budget (``law_test``, ``planned_draws``). The test must resolve the
effect the family's checks resolve at the run's budget (``target_tv``: the largest total
variation among the ``*_tv`` effects of the family's budget: for the project's families
0.1-0.15 at smoke, 0.05 at quick, 0.01 at standard, 0.005 at thorough), so ``M`` is the
smallest number of draws at which ``detectable_tv(M, df, R) <= target``, ``M =
lambda*(df) / (2 R target^2)``. The df depends on how many cells the draws fill, so ``M`` is
planned first for two cells a row (df = R), the draws made, the cells counted, and ``M``
planned again from the df found, until it stands (``ROUNDS`` at most; each round's choice
depends only on the pooled column totals, not on the statistic, so alpha holds). M a
kernel, by the rows of the call and the cells each fills, at the sample family's targets:

  | rows x cells | df | lambda* | smoke (0.1) | quick (0.05) | standard (0.01) | thorough (0.005) |
  |---|---|---|---|---|---|---|
  | 1 x 2 | 1 | 31.5 | 1,578 | 6,310 | 157,747 | 630,986 |
  | 1 x 32 | 31 | 68.5 | 3,426 | 13,701 | 342,511 | 1,370,041 |
  | 8 x 32 | 248 | 147.4 | 922 | 3,686 | 92,149 | 368,596 |
  | 64 x 32 | 1984 | 368.6 | 289 | 1,153 | 28,801 | 115,203 |

``M`` is at least ``MIN_DRAWS`` = 32 and at most what fits in
``OUTCOMES`` = 2^23 ids a kernel and in ``SECONDS`` of calls (10 s at smoke, 120 s at
quick and above: the time of the first ``TIMED`` draws of each kernel, then of each round,
sets it): a test cut short by either states the draws it made and the total variation it
detects.

Verdicts: rejected: "differs" (a real change of law, a gap); not rejected with
``detectable_tv <= target``: "same-law" (outside the score); not rejected and weaker than
the target (draws cut short by the time or the memory, a call of few draws), or no test at
all (no row with two cells, fewer than ``MIN_DRAWS`` draws fit): "undecided", with the
total variation it detects (its *power*) where it ran: outside the score, never a gap.
"untested" (a gap): a kernel raised or returned an invalid output on a fresh seed.
Calibration (300 pairs of samples of one law, 8 rows of 16 tokens): the p-values are
uniform (5.0 % under 0.05, 1.3 % under 0.01).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

import numpy as np
import torch

from sampling_harness.budgets import BUDGET_NAMES
from sampling_harness.mutate.fingerprint import digest, parts
from sampling_harness.mutate.homogeneity import (
    ALPHA,
    PAD,
    POWER,
    cell_df,
    homogeneity,
    planned_draws,
    stacked,
)
from sampling_harness.seeds import derive_seed

MIN_DRAWS = 32             # fewer (a very large output, a very slow kernel): no test
OUTCOMES = 1 << 23         # ids kept per kernel at most (64 MiB of int64): M x B x W
SECONDS = {"smoke": 10.0, "quick": 120.0, "standard": 120.0, "thorough": 120.0}
TIMED = 4                  # the first calls of each kernel, timed for the estimate
ROUNDS = 6                 # plans of M at most (each from the cells the draws so far fill)
ENV_BUDGET = "SAMPLING_HARNESS_MUTATE_BUDGET"   # the run's budget, in a mutant's child run
DEFAULT_BUDGET = "quick"   # where the environment names none
# the effect of a family whose budgets state no ``*_tv`` field: the project's families' own
FALLBACK_TV = {"smoke": 0.1, "quick": 0.05, "standard": 0.01, "thorough": 0.005}


def _is_ids(value) -> bool:
    """An integer tensor (not bool), or a list of lists of ints: drawn token ids."""
    if isinstance(value, torch.Tensor):
        return not value.dtype.is_floating_point and not value.dtype.is_complex \
            and value.dtype != torch.bool
    return isinstance(value, list) and all(isinstance(row, (list, tuple)) for row in value)


def not_draws(family, original, mutant) -> str | None:
    """Why the difference of these two validated outputs is not one of draws (then there is
    no law to test: it stays a gap), or None when it may be: the contract takes a seed, the
    parts that differ are ids, every other part is identical."""
    if "seed" not in family.parameters:
        return f"family {family.name} takes no seed: its outputs are values, not draws"
    pairs = list(zip(parts(original), parts(mutant), strict=False))
    if len(parts(original)) != len(parts(mutant)):
        return "the outputs have different parts"
    ids = 0
    for i, (a, b) in enumerate(pairs):
        if _is_ids(a) and _is_ids(b):
            ids += 1
        elif digest(a) != digest(b):
            return f"output part {i} (not ids) differs: a difference of values, not of draws"
    return None if ids else "no output part holds ids"


def outcome_rows(output) -> torch.Tensor:
    """int64 [B, W] on the CPU: row r is the outcome of request r, its ids of every integer
    part side by side (a 1-D part is one column; a list of id lists is padded with -1)."""
    columns = []
    for part in parts(output):
        if isinstance(part, torch.Tensor) and _is_ids(part):
            ids = part.detach().to("cpu", torch.int64)
            columns.append(ids.reshape(ids.shape[0], -1) if ids.dim() else ids.reshape(1, 1))
        elif isinstance(part, list) and _is_ids(part):
            width = max((len(row) for row in part), default=0) or 1
            columns.append(torch.tensor([list(map(int, row)) + [PAD] * (width - len(row))
                                         for row in part], dtype=torch.int64).reshape(
                len(part), width))
    return torch.cat(columns, dim=1)


def target_tv(family, budget: str) -> float:
    """The total variation the law test must resolve at ``budget``: the largest of the
    ``*_tv`` effects the family's checks state at that budget (the coarsest law effect its
    checks resolve there), or ``FALLBACK_TV`` for a family whose budget states none."""
    declared = (getattr(family, "budgets", None) or {}).get(budget)
    found = []
    if declared is not None and dataclasses.is_dataclass(declared):
        found = [getattr(declared, f.name) for f in dataclasses.fields(declared)
                 if f.name.endswith("_tv")]
    found = [float(v) for v in found if isinstance(v, (int, float)) and v > 0]
    return max(found) if found else FALLBACK_TV.get(budget, FALLBACK_TV[DEFAULT_BUDGET])


def run_budget() -> str:
    """The budget of the run this process belongs to (``ENV_BUDGET``, set by ``mutate`` for
    its mutants' child runs), ``DEFAULT_BUDGET`` where none is named."""
    name = os.environ.get(ENV_BUDGET, "")
    return name if name in BUDGET_NAMES else DEFAULT_BUDGET


class SeedStream:
    """Fresh seeds of the kind of ``seed``, every value distinct from every other this stream
    gave (within a batch and across batches): ints in [0, 2^31 - 1); for per-request seeds
    (an int64 [B] tensor) the same tensor with each entry >= 0 replaced by a fresh value,
    -1 (unseeded) kept. Deterministic in (``seed``'s kind, ``key``)."""

    def __init__(self, seed, key: str):
        self.seed = seed
        self.per_row = seed.numel() if isinstance(seed, torch.Tensor) else 1
        self.rng = np.random.default_rng(derive_seed("law", key))
        self.taken: set[int] = set()

    def take(self, count: int) -> list:
        wanted = count * self.per_row
        found: dict[int, None] = {}
        while len(found) < wanted:
            for value in self.rng.integers(0, 2**31 - 1, wanted).tolist():
                if value not in self.taken:
                    found.setdefault(value, None)
        values = np.fromiter(found, dtype=np.int64, count=len(found))[:wanted]
        self.taken.update(values.tolist())
        if not isinstance(self.seed, torch.Tensor):
            return [int(v) for v in values]
        fresh = torch.from_numpy(values.reshape(count, self.per_row)).to(self.seed.device)
        return [torch.where(self.seed == -1, self.seed, fresh[i]) for i in range(count)]


def draw_seeds(seed, count: int, key: str) -> list:
    """``count`` seeds of the kind of ``seed``, every value distinct (``SeedStream``)."""
    return SeedStream(seed, key).take(count)


def sample(call: Callable, seeds: list, key: str, first: int = 0) -> torch.Tensor:
    """[M, B, W]: the outcome rows of ``call(seed)`` for each seed, torch's global generators
    put in a fixed state before each call (draw ``first + i``: unseeded requests draw from
    them; a fixed state per draw keeps the mutant's run deterministic, a distinct one keeps
    the draws fresh)."""
    rows = []
    for i, seed in enumerate(seeds, first):
        _seed_global(derive_seed("law-state", key, i))
        rows.append(outcome_rows(call(seed)))
    return stacked(rows)


def _seed_global(value: int) -> None:
    """``torch.manual_seed(value)`` for the generators a kernel can have drawn from: the
    CPU's, and every GPU's once CUDA is initialised (a run that has not used CUDA by its
    first differing call never will). ``torch.manual_seed`` itself queues a lazy CUDA
    seeding, with its traceback, on every call while CUDA is not initialised: 1.4 ms a draw
    on a CPU, more than a small torch kernel's call."""
    torch.default_generator.manual_seed(value)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(value)


def _padded(samples: list[torch.Tensor]) -> list[torch.Tensor]:
    """The samples [M_i, B, W_i] padded with -1 to one width W."""
    width = max(s.shape[2] for s in samples)
    return [torch.nn.functional.pad(s, (0, width - s.shape[2]), value=PAD)
            if s.shape[2] < width else s for s in samples]


def law_test(family, original_fn, mutant_fn, inputs: dict, seed, key: str,
             batch_outcomes: int, draws: int | None = None, alpha: float = ALPHA,
             power: float = POWER, budget: str | None = None,
             tv: float | None = None) -> dict:
    """The law test of one differing call: M calls of each kernel on ``inputs``, with
    distinct seeds (``SeedStream``: none shared between the two kernels), and
    ``homogeneity``: Pearson's two-sample chi-square at ``alpha`` (1e-3), its power stated
    at ``power`` (0.99) as the smallest total variation it detects on every row (module doc).

    The draws: planned so that the test detects ``tv`` (default ``target_tv(family,
    budget)``; ``budget`` default ``run_budget()``) on every row (``planned_draws``, from
    df = rows, then again from the cells the draws fill, up to ``ROUNDS`` times), at least
    ``MIN_DRAWS``, at most what fits in ``OUTCOMES`` ids (``batch_outcomes``: the ids of one
    output, B x W) and in ``SECONDS[budget]`` of calls (estimated from the first ``TIMED``
    draws of each kernel, then from every round). ``draws`` fixes M instead (the same
    bounds apply).

    ``verdict``: "differs" (rejected), "same-law" (not rejected, and the test detects
    ``tv``), "undecided" (not rejected and too weak for ``tv``, or no test: ``reason``
    says why, ``tv`` the total variation it detects where it ran), "untested" (a kernel
    raised or returned an invalid output on a fresh seed: a gap)."""
    budget = budget or run_budget()
    target = tv if tv is not None else target_tv(family, budget)
    seconds = SECONDS.get(budget, SECONDS[DEFAULT_BUDGET])
    fits = OUTCOMES // max(1, batch_outcomes)
    plan = {"budget": budget, "target_tv": target, "max_seconds": seconds}
    if fits < MIN_DRAWS:
        return {**plan, "verdict": "undecided", "reason": f"outputs too large "
                f"({batch_outcomes} ids a call: fewer than {MIN_DRAWS} draws fit in "
                f"{OUTCOMES} ids)"}
    stream = SeedStream(seed, key)
    started = time.perf_counter()

    def call(fn):
        def one(s):
            fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v
                     for k, v in inputs.items()}
            return family.validate(family.call(fn, fresh, s), inputs)
        return one

    kernels = (("original", call(original_fn)), ("mutant", call(mutant_fn)))
    samples: list[torch.Tensor] = []

    def more(count: int) -> None:
        """``count`` more draws of each kernel (seeds: the original's, then the mutant's)."""
        made = samples[0].shape[0] if samples else 0
        fresh = [sample(fn, stream.take(count), f"{key}/{who}", made) for who, fn in kernels]
        if samples:
            fresh = [torch.cat(_padded([old, new])) for old, new in zip(samples, fresh,
                                                                          strict=True)]
        samples[:] = _padded(fresh)

    try:
        more(TIMED)
        per_draw = (time.perf_counter() - started) / TIMED   # seconds a draw of each kernel
        if per_draw * MIN_DRAWS > seconds:
            return {**plan, "verdict": "undecided", "reason": f"too slow to test: "
                    f"{2 * MIN_DRAWS} calls would take about {per_draw * MIN_DRAWS:.0f} s "
                    f"(over {seconds:.0f} s at {budget})"}
        rows = samples[0].shape[1]
        planned = draws if draws is not None else max(MIN_DRAWS, planned_draws(
            rows, rows, target, alpha, power))               # two cells a row, to begin
        cause = f"the planning's {ROUNDS} rounds"
        for _ in range(ROUNDS):
            made = samples[0].shape[0]
            by_time = int(seconds / per_draw)
            cap = max(made, min(fits, by_time))
            if min(planned, cap) > made:
                more(min(planned, cap) - made)
                per_draw = (time.perf_counter() - started) / samples[0].shape[0]
            if samples[0].shape[0] < planned:         # cut short: test what is
                cause = f"the time limit ({seconds:.0f} s at {budget})" if by_time < fits \
                    else f"the output's size ({OUTCOMES} ids a kernel)"
                break
            if draws is not None:
                break
            df, tested = cell_df(*samples)
            if df == 0:
                break
            planned = max(MIN_DRAWS, planned_draws(df, tested, target, alpha, power))
            if planned <= samples[0].shape[0]:
                break
    except Exception as exc:         # a crash or an invalid output on other seeds: a gap
        return {**plan, "verdict": "untested", "reason": f"a kernel failed on a fresh seed: "
                f"{type(exc).__name__}: {exc}"[:300]}
    made = samples[0].shape[0]
    result = {**plan, **homogeneity(samples[0], samples[1], alpha, power),
              "planned_draws": planned, "seconds": round(time.perf_counter() - started, 2)}
    if result["rejected"] is None:
        return {**result, "verdict": "undecided", "reason": "no row has two outcomes with "
                "enough draws (no degrees of freedom)"}
    if result["rejected"]:
        return {**result, "verdict": "differs"}
    if result["tv"] <= target:
        return {**result, "verdict": "same-law"}
    short = f"; {made} of the {planned} draws planned, cut short by {cause}" \
        if made < planned else ""
    return {**result, "verdict": "undecided", "reason": (
        f"too weak to decide: not rejected, but its {made} draws detect only a total "
        f"variation >= {result['tv']:.3g} on every row, above the {target:g} the family's "
        f"checks resolve at {budget}{short}")}


def power_label(law: dict | None) -> str:
    """'power 0.21': the total variation a law test detects on every row (with power 0.99),
    or 'no test' where none ran."""
    value = (law or {}).get("tv")
    return f"power {value:.3g}" if isinstance(value, (int, float)) else "no test"


def describe(law: dict) -> str:
    """The test in one clause, for a report: 'two-sample chi-square over 256 x 8 draws per
    kernel: X^2 = 77.9 on 72 df, p = 0.298 (alpha 0.001; detects chi-square distance >=
    0.713 summed over the 8 rows tested, total variation >= 0.149 on every row, with power
    0.99; the budget quick asks 0.05)'; a law without a test: why."""
    if law.get("p_value") is None:
        return law.get("reason", "?")
    rows = law.get("rows_tested", 0)
    target = f"; the budget {law['budget']} asks {law['target_tv']:g}" \
        if "target_tv" in law and "budget" in law else ""
    power = (f"; detects chi-square distance >= {law['distance']:.3g} summed over the "
             f"{rows} row{'s' if rows != 1 else ''} tested, total variation >= "
             f"{law['tv']:.3g} on every row, with power {law['power']:g}{target}") \
        if "distance" in law else ""
    return (f"two-sample chi-square over {law['draws']} x {law['rows']} draws per kernel: "
            f"X^2 = {law['statistic']:.1f} on {law['df']} df, p = {law['p_value']:.3g} "
            f"(alpha {law['alpha']:g}{power})")
