"""The law of a survivor's draws: a two-sample chi-square test of homogeneity.

A mutant of a sampler that only re-keys its random stream (another chunk width, another
Philox counter layout, another range of fresh seeds) gives other tokens on the same seed,
drawn from the same law. The differential (harness/mutate/recorder.py) sees its outputs
differ; this module asks whether its *law* differs, at the first call whose output differs:
the original kernel and the mutant are each called ``M`` times on that call's inputs with
fresh, distinct seeds, and the two samples are compared row by row.

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

The test (``homogeneity``). Row r: the counts of each outcome in the original's ``M`` draws
and the mutant's ``M`` form a 2 x k table; outcomes are pooled (``stats.chisquare.pool_bins``)
so that every cell expects at least 5 draws in each sample, and Pearson's statistic
``X_r^2`` (``scipy.stats.chi2_contingency``, no continuity correction) is asymptotically
chi^2(k_r - 1) when both samples have one law. Rows of one call are independent given
distinct seeds (the family's independence check holds the kernel to that), so
``X^2 = sum_r X_r^2`` is chi^2(sum_r (k_r - 1)) under H0, and the test rejects at
``p = chi2.sf(X^2, df) < alpha``: a false rejection (a re-keying mutant reported as a gap)
has probability ``alpha`` per mutant tested.

Power. Against laws ``p_r`` (original) and ``q_r`` (mutant) on the pooled cells, with ``n``
draws each, the statistic is asymptotically noncentral chi^2(df, lambda) with
``lambda = (n / 2) * D``, ``D = sum_r sum_j (p_rj - q_rj)^2 / m_rj``, ``m = (p + q) / 2``:
the chi-square distance of the two laws from their mixture, summed over the rows. The
smallest ``lambda`` found with ``power`` (``stats.chisquare.noncentrality_for_power``) gives
the smallest detectable distance ``D* = 2 lambda / n``; since ``sum_j (p - q)^2 / m >=
(sum_j |p - q|)^2 = 4 TV^2`` (Cauchy-Schwarz), every pair of laws at total variation ``>=
sqrt(lambda / (2 n R))`` on each of the ``R`` rows tested is detected with that power. Both
statements are on the pooled cells: a change of law inside a pooled cell, or on a row with a
single cell, is not seen.

Choices: ``alpha = 1e-3`` (a run with 10 re-keying survivors files one as a gap with
probability 1 %; smaller would cost power against the worse error, a changed law filed as
same-law); power 0.99, the doctrine's (DESIGN.md); ``M`` draws a kernel by device, fixed
so that a verdict does not depend on the machine's speed: 4096 on a GPU (one row of two
outcomes: total variation 0.065 detected; 8 rows of 10: 0.04), 8192 calls that take a few
seconds; 256 on a CPU, where Triton's interpreter makes the 512 calls take about 20 s (one row
of two outcomes: 0.26; 8 rows of 10: 0.16; 64 rows: 0.09). A test that is not rejected
files the mutant as same-law only where it detects a total variation of ``MAX_TV`` = 0.05 on
every row tested (what quick's law checks resolve): a weaker one leaves it a gap ("too weak
to clear it"), so that a real law change is never cleared by a test that could not see it.
On a CPU that is most of them; on a GPU, a call of a few rows or more.
Calibration (300 pairs of samples of one law, 8 rows of 16 tokens): the p-values are
uniform (5.0 % under 0.05, 1.3 % under 0.01).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import torch
from scipy import stats

from sampling_harness.mutate.fingerprint import digest, parts
from sampling_harness.seeds import derive_seed
from sampling_harness.stats.chisquare import noncentrality_for_power, pool_bins, pooled

ALPHA = 1e-3               # a re-keying mutant is reported as a gap with this probability
POWER = 0.99               # the power at which the detectable deviation is stated
DRAWS = {"cuda": 4096, "cpu": 256}   # M by device: calls of each kernel on the inputs
MIN_DRAWS = 32             # fewer (a very large output) and the law is not tested
OUTCOMES = 1 << 23         # ids kept per kernel at most (64 MiB of int64): M x B x W
SECONDS = 120.0            # the 2 M calls may take this long (estimated), or none is made
TIMED = 4                  # the first calls of each kernel, timed for the estimate
PAD = -1                   # fills a short row of ids (lists of drafts)
MAX_TV = 0.05              # same-law needs a test that sees this total variation a row


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


def stacked(rows: list[torch.Tensor]) -> torch.Tensor:
    """[M, B, W] from M outcome tables [B, W_i], short ones padded with -1 on the right."""
    width = max(r.shape[1] for r in rows)
    return torch.stack([torch.nn.functional.pad(r, (0, width - r.shape[1]), value=PAD)
                        for r in rows])


def cell_counts(first: torch.Tensor, second: torch.Tensor) -> list[np.ndarray]:
    """Per row, the 2 x k table of outcome counts: [2, k] int64, the first sample's counts
    then the second's, over the k distinct outcomes of that row in either sample."""
    both = stacked([*first, *second])                          # [2M, B, W]
    draws, rows, _ = both.shape
    row = torch.arange(rows).repeat(draws)[:, None]
    keyed = torch.cat([row, both.reshape(draws * rows, -1)], dim=1)
    cells, inverse = torch.unique(keyed, dim=0, return_inverse=True)
    sample = (torch.arange(draws * rows) >= first.shape[0] * rows).long()
    counts = torch.zeros(cells.shape[0], 2, dtype=torch.int64)
    counts.index_put_((inverse, sample), torch.ones_like(inverse), accumulate=True)
    starts = torch.searchsorted(cells[:, 0].contiguous(), torch.arange(rows + 1))
    table = counts.numpy().T
    return [table[:, a:b] for a, b in zip(starts[:-1].tolist(), starts[1:].tolist(),
                                          strict=True)]


def row_statistic(table: np.ndarray) -> tuple[float, int]:
    """Pearson's X^2 of homogeneity of one row's 2 x k table, cells pooled so that each
    expects >= 5 draws in each sample (expected_ij = n_i c_j / N, so a cell is kept when
    c_j min(n_i) / N >= 5): (statistic, k' - 1), (0, 0) when fewer than two cells remain."""
    sizes = table.sum(axis=1)
    expected = table.sum(axis=0) * sizes.min() / sizes.sum()
    labels = pool_bins(expected)
    merged = np.stack([pooled(table[0], labels), pooled(table[1], labels)])
    if merged.shape[1] < 2:
        return 0.0, 0
    result = stats.chi2_contingency(merged, correction=False)
    return float(result.statistic), int(result.dof)


def homogeneity(first: torch.Tensor, second: torch.Tensor, alpha: float = ALPHA,
                power: float = POWER) -> dict:
    """The two-sample test of the law of ``first`` and ``second``, int64 [M, B, W] each (M
    draws of B rows, the same M for both): the summed statistic, its df and p-value, the
    verdict at ``alpha`` and the smallest deviation detected with ``power`` (module doc).
    ``rejected`` is None when no row has two cells (no df: nothing can be told)."""
    if first.shape[0] != second.shape[0]:
        raise ValueError(f"the samples must be of one size, got {first.shape[0]} and "
                         f"{second.shape[0]}")
    draws, rows = first.shape[0], first.shape[1]
    statistic, df, tested = 0.0, 0, 0
    for table in cell_counts(first, second):
        x, k = row_statistic(table)
        statistic, df, tested = statistic + x, df + k, tested + (k > 0)
    body = {"draws": draws, "rows": rows, "rows_tested": tested, "statistic": statistic,
            "df": df, "alpha": alpha, "power": power}
    if df == 0:
        return {**body, "p_value": None, "rejected": None}
    lam = noncentrality_for_power(df, alpha, power)
    p_value = float(stats.chi2.sf(statistic, df))
    return {**body, "p_value": p_value, "rejected": p_value < alpha, "noncentrality": lam,
            "distance": 2.0 * lam / draws, "tv": math.sqrt(lam / (2.0 * draws * tested))}


def draw_seeds(seed, count: int, key: str) -> list:
    """``count`` seeds of the kind of ``seed``, every value distinct (within and across
    them): ints in [0, 2^31 - 1); for per-request seeds (an int64 [B] tensor) the same
    tensor with each entry >= 0 replaced by a fresh value, -1 (unseeded) kept."""
    per_row = seed.numel() if isinstance(seed, torch.Tensor) else 1
    rng = np.random.default_rng(derive_seed("law", key))
    found: dict[int, None] = {}
    while len(found) < count * per_row:
        for value in rng.integers(0, 2**31 - 1, count * per_row).tolist():
            found.setdefault(value, None)
    values = np.fromiter(found, dtype=np.int64, count=len(found))[:count * per_row]
    if not isinstance(seed, torch.Tensor):
        return [int(v) for v in values]
    fresh = torch.from_numpy(values.reshape(count, per_row)).to(seed.device)
    return [torch.where(seed == -1, seed, fresh[i]) for i in range(count)]


def sample(call: Callable, seeds: list, key: str, first: int = 0) -> torch.Tensor:
    """[M, B, W]: the outcome rows of ``call(seed)`` for each seed, torch's global generators
    put in a fixed state before each call (draw ``first + i``: unseeded requests draw from
    them; a fixed state per draw keeps the mutant's run deterministic, a distinct one keeps
    the draws fresh)."""
    rows = []
    for i, seed in enumerate(seeds, first):
        torch.manual_seed(derive_seed("law-state", key, i))
        rows.append(outcome_rows(call(seed)))
    return stacked(rows)


def law_test(family, original_fn, mutant_fn, inputs: dict, seed, key: str,
             batch_outcomes: int, draws: int | None = None, alpha: float = ALPHA,
             power: float = POWER) -> dict:
    """The law test of one differing call: ``draws`` calls of each kernel on ``inputs``,
    with distinct seeds (``draw_seeds``: the original's then the mutant's, none shared), and
    ``homogeneity``. ``verdict``: "same-law" (not rejected), "differs" (rejected) or
    "untested" (with ``reason``: too slow, too large, a call that failed, no df).
    ``draws`` (M): by default ``DRAWS`` of the inputs' device type.
    ``batch_outcomes``: the ids of one output (B x W), which bound M by ``OUTCOMES``. The
    cost is estimated from the first TIMED draws of each kernel (both already ran on these
    shapes: no compilation in them; one draw's time alone, beside a busy run's other
    workers, is noisy); over ``SECONDS`` no more are made."""
    if draws is None:
        devices = {v.device.type for v in inputs.values() if isinstance(v, torch.Tensor)}
        draws = DRAWS["cuda" if "cuda" in devices else "cpu"]
    draws = min(draws, OUTCOMES // max(1, batch_outcomes))
    if draws < MIN_DRAWS:
        return {"verdict": "untested", "reason": f"outputs too large ({batch_outcomes} ids "
                f"a call: fewer than {MIN_DRAWS} draws fit in {OUTCOMES} ids)"}
    seeds = draw_seeds(seed, 2 * draws, key)
    started = time.perf_counter()
    kernels = (("original", original_fn, seeds[:draws]), ("mutant", mutant_fn, seeds[draws:]))

    def call(fn):
        def one(s):
            fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v
                     for k, v in inputs.items()}
            return family.validate(family.call(fn, fresh, s), inputs)
        return one
    try:
        heads = [sample(call(fn), chosen[:TIMED], f"{key}/{who}")
                 for who, fn, chosen in kernels]
        estimate = draws / TIMED * (time.perf_counter() - started)
        if estimate > SECONDS:
            return {"verdict": "untested", "reason": f"{2 * draws} calls would take about "
                    f"{estimate:.0f} s (over {SECONDS:.0f} s)"}
        samples = [torch.cat([head, sample(call(fn), chosen[TIMED:], f"{key}/{who}", TIMED)])
                   for head, (who, fn, chosen) in zip(heads, kernels, strict=True)]
    except Exception as exc:         # a crash or an invalid output on other seeds: a gap
        return {"verdict": "untested", "reason": f"a kernel failed on a fresh seed: "
                f"{type(exc).__name__}: {exc}"[:300]}
    if samples[0].shape[2] != samples[1].shape[2]:
        width = max(s.shape[2] for s in samples)
        samples = [torch.nn.functional.pad(s, (0, width - s.shape[2]), value=PAD)
                   for s in samples]
    result = homogeneity(samples[0], samples[1], alpha, power)
    result["seconds"] = round(time.perf_counter() - started, 2)
    if result["rejected"] is None:
        return {**result, "verdict": "untested", "reason": "no row has two outcomes with "
                "enough draws (no degrees of freedom)"}
    if not result["rejected"] and result["tv"] > MAX_TV:
        return {**result, "verdict": "untested", "reason": (
            f"too weak to clear it: p = {result['p_value']:.3g}, but over {draws} draws the "
            f"test detects only a total variation >= {result['tv']:.3g} on every row, above "
            f"{MAX_TV:g} (what quick's law checks resolve)")}
    return {**result, "verdict": "differs" if result["rejected"] else "same-law"}


def describe(law: dict) -> str:
    """The test in one clause, for a report: 'two-sample chi-square over 256 x 8 draws per
    kernel: X^2 = 77.9 on 72 df, p = 0.298 (alpha 0.001; detects chi-square distance >=
    0.713 summed over the 8 rows tested, total variation >= 0.149 on every row, with power
    0.99)'; an untested law: why."""
    if law.get("p_value") is None:
        return law.get("reason", "?")
    rows = law.get("rows_tested", 0)
    power = (f"; detects chi-square distance >= {law['distance']:.3g} summed over the "
             f"{rows} row{'s' if rows != 1 else ''} tested, total variation >= "
             f"{law['tv']:.3g} on every row, with power {law['power']:g}") \
        if "distance" in law else ""
    return (f"two-sample chi-square over {law['draws']} x {law['rows']} draws per kernel: "
            f"X^2 = {law['statistic']:.1f} on {law['df']} df, p = {law['p_value']:.3g} "
            f"(alpha {law['alpha']:g}{power})")
