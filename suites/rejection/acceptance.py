"""Acceptance length of family ``rejection``: the law of A, the number of accepted drafts.

With drafts drawn from q, position i accepts with alpha_i = sum_x q(x) min(1, p(x)/q(x))
and P(A >= j) = prod_{i<j} alpha_i (reference/rejection.py). Per random request of the
curated batch, a Pearson chi-square of the counts of A = 0..n against that law (sparse
cells pooled; an observed impossible length is an exact failure).

Effect: a relative drop ``shift`` of every acceptance probability (alpha_i -> alpha_i
(1 - shift)), the way a sampler that mishandles q loses acceptance (the field bug that
never passed draft probabilities halved it). The draws are planned so that the drop
``budget.accept_shift`` is detected with power ``budget.power`` for every request: the
statistic is then noncentral chi-square with noncentrality n sum_j (P'_j - P_j)^2 / P_j.
Alpha: the check's share, split over the requests tested.

The record and the message state the acceptance rate measured (accepted drafts over the
drafts reached) against its exact expectation: alpha_i = sum_x min(p_i(x), q_i(x)) =
1 - TV(p_i, q_i) at each position, weighted by how often the position is reached.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from sampling_harness.checks.fits import law_test, laws_outcome
from sampling_harness.reference.rejection import acceptance_length_law, acceptance_probs
from sampling_harness.report.plots import lengths_plot
from sampling_harness.stats.chisquare import noncentrality_for_power, pool_bins, pooled
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.suites.rejection.draws import tally
from sampling_harness.suites.rejection.requests import CURATED, build

CERTAIN = 1e-9    # 1 - P(A = n) below this is p = q up to float64 rounding: A = n for certain


def shift_noncentrality(alphas: np.ndarray, shift: float, draws: int) -> tuple[float, int]:
    """(noncentrality per draw, df) of the chi-square against the shifted law, on the bins
    the test pools at ``draws`` draws."""
    law = acceptance_length_law(alphas)
    shifted = acceptance_length_law(alphas * (1.0 - shift))
    labels = pool_bins(draws * law)
    null, alt = pooled(law, labels), pooled(shifted, labels)
    return float(np.sum((alt - null) ** 2 / null)), max(1, int(labels.max()))


def planned_draws(alphas: list[np.ndarray], shift: float, alpha: float, power: float) -> int:
    """Draws per request so that every request's test detects ``shift`` with ``power``: the
    pooling depends on the draws, so iterate to the fixed point (doubling while the shift
    is invisible on the pooled bins)."""
    draws = 1000
    for _ in range(40):
        needed = draws
        for a in alphas:
            ncp, df = shift_noncentrality(a, shift, draws)
            required = noncentrality_for_power(df, alpha, power)
            needed = max(needed, 2 * draws if ncp <= 0 else math.ceil(required / ncp))
        if needed <= draws:
            return draws
        draws = needed
    raise RuntimeError(f"no sample size detects a shift of {shift:g}")


def min_detectable_shift(alphas: np.ndarray, draws: int, alpha: float, power: float) -> float:
    """The smallest relative drop of the acceptance probabilities detected with ``power``."""
    def gap(shift):
        ncp, df = shift_noncentrality(alphas, shift, draws)
        return ncp * draws - noncentrality_for_power(df, alpha, power)
    if gap(0.999) < 0:
        return 1.0
    return float(optimize.brentq(gap, 1e-9, 0.999, xtol=1e-6))


def rates(counts: np.ndarray, alphas: np.ndarray) -> dict:
    """Acceptance measured from the counts of A = 0..n, and expected from 1 - TV(p_i, q_i):
    reached_i = #(A >= i), accepted_i = #(A >= i + 1); the expected totals are the draws
    times sum_i P(A >= i) alpha_i and sum_i P(A >= i)."""
    at_least = np.cumsum(counts[::-1])[::-1]          # #(A >= j), j = 0..n
    reach = np.concatenate([[1.0], np.cumprod(alphas)])[:-1]   # P(A >= i), i < n
    return {"accepted": int(at_least[1:].sum()), "reached": int(at_least[:-1].sum()),
            "expected_accepted": float(counts.sum() * np.dot(reach, alphas)),
            "expected_reached": float(counts.sum() * reach.sum()),
            "one_minus_tv": alphas.tolist(),
            "measured_per_position": (at_least[1:] / np.maximum(at_least[:-1], 1)).tolist()}


def rate_note(results: list[dict]) -> str:
    accepted = sum(r["rates"]["accepted"] for r in results)
    reached = sum(r["rates"]["reached"] for r in results)
    expected = (sum(r["rates"]["expected_accepted"] for r in results)
                / sum(r["rates"]["expected_reached"] for r in results))
    return (f"; acceptance rate {accepted / max(reached, 1):.4f} measured over {reached} drafts "
            f"reached, {expected:.4f} expected (1 - TV(p, q) per position, exact)")


def acceptance_length(ctx):
    budget = ctx.budget
    names, laws = build(CURATED, budget.joint_vocab, ctx.seed)
    alphas = {}
    for b in range(laws.batch):
        target, draft, _, _, greedy = laws.request(b)
        a = acceptance_probs(target, draft)
        # A = n for certain (p = q: the product is 1 up to rounding) is checked exactly
        # elsewhere; its law here would be one pooled bin, with no shift to detect
        if not greedy and a.size and 1.0 - a.prod() > CERTAIN:
            alphas[b] = a
    alpha = bonferroni(ctx.alpha, len(alphas))
    draws = planned_draws(list(alphas.values()), budget.accept_shift, alpha, budget.power)
    tables = tally(ctx, laws, draws)
    results = []
    for b, a in alphas.items():
        record = law_test(names[b], tables[b].sum(1), acceptance_length_law(a), alpha,
                          budget.power)
        record.update(acceptance=a.tolist(), rates=rates(tables[b].sum(1), a),
                      min_detectable_shift=min_detectable_shift(a, draws, alpha, budget.power),
                      plot=lengths_plot(f"acceptance length of {names[b]}", tables[b].sum(1),
                                        acceptance_length_law(a), record["p_value"]))
        results.append(record)
    result = laws_outcome(ctx, results, alpha,
                          f"relative drop of every acceptance probability (target "
                          f"{budget.accept_shift:g})", draws * len(alphas),
                          mde=max(r["min_detectable_shift"] for r in results),
                          describe=lambda r: f"A = {r['worst_cell']}")
    result.message += rate_note(results)
    return result
