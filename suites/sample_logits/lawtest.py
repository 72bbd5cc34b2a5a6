"""The goodness-of-fit test of one processed row, valid whatever the ambiguous tokens do.

Let C be the surely kept tokens of a row, A the ambiguous ones (reference/processed.py) and
a_max the mass ``inclusive`` gives A (the most a kernel that keeps every ambiguous token can
put there). Whatever subset of A a kernel keeps:

* conditional on landing in C, a draw has law ``certain`` (softmax over C) exactly; given
  n_C draws in C, the counts over C are Multinomial(n_C, certain). Two Pearson chi-square
  tests run on them: coarse (at most ``max_bins`` equal-mass bins, the stated effect) and
  fine (every token its own bin unless it expects fewer than 5 draws);
* the count of draws in A is Binomial(n, a) with a <= a_max; a one-sided exact test for an
  excess over a_max (skipped, p = 1, when A is empty);
* a token outside C and A is never drawn (``demand_possible``).

Three tests per row, each at ``alpha``; the effect is the coarse test's total variation on
its bins at the planned n (with n_C >= n (1 - a_max) in C: a_max is reported).
"""

from __future__ import annotations

import numpy as np

from sampling_harness.report.plots import counts_plot
from sampling_harness.stats.binomial import upper_p
from sampling_harness.stats.chisquare import chisquare_gof, min_detectable_tv, pool_bins

TESTS_PER_ROW = 3


def fit_row(name: str, counts: np.ndarray, certain: np.ndarray, inclusive: np.ndarray,
            ambiguous: np.ndarray, alpha: float, power: float, max_bins: int) -> list[dict]:
    """The three tests of one row: a result dict each (p_value, statistic, df, draws...)."""
    draws = int(counts.sum())
    in_c = certain > 0
    n_c = int(counts[in_c].sum())
    a_max = float(inclusive[ambiguous].sum())
    k_a = int(counts[ambiguous].sum())
    base = {"row": name, "vocab": int(counts.size), "draws": draws, "in_certain": n_c,
            "kept_certain": int(in_c.sum()), "ambiguous_tokens": int(ambiguous.sum()),
            "ambiguous_max_mass": a_max, "ambiguous_draws": k_a}
    results = []
    for test, bins in (("coarse", max_bins), ("fine", None)):
        p = certain[in_c]
        labels = pool_bins(n_c * p, max_bins=bins)
        statistic, df, p_value = chisquare_gof(counts[in_c], p, labels)
        results.append({**base, "test": test, "df": df, "statistic": statistic,
                        "p_value": p_value,
                        "min_detectable_tv": min_detectable_tv(max(n_c, 1), max(df, 1),
                                                               alpha, power),
                        "plot": counts_plot(f"row {name!r}, {test} test (surely kept tokens)",
                                            counts[in_c], p, labels, p_value, statistic, df,
                                            ids=np.flatnonzero(in_c))})
    p_amb = upper_p(k_a, draws, min(a_max, 1.0)) if ambiguous.any() else 1.0
    results.append({**base, "test": "ambiguous excess", "df": 0, "statistic": float(k_a),
                    "p_value": p_amb, "min_detectable_tv": 0.0})
    return results


def summary(results: list[dict], alpha: float) -> tuple[bool, str, dict]:
    """(passed, message, worst result) over the tests of a check."""
    failed = [r for r in results if r["p_value"] <= alpha]
    worst = min(results, key=lambda r: r["p_value"])
    if failed:
        message = (f"{len(failed)} of {len(results)} tests reject; worst: row {worst['row']!r} "
                   f"(V={worst['vocab']}) {worst['test']}: statistic {worst['statistic']:.1f} "
                   f"on {worst['df']} df, p = {worst['p_value']:.2g}")
    else:
        rows = len({r["row"] for r in results})
        ambiguous = sum(r["ambiguous_tokens"] for r in results if r["test"] == "coarse")
        message = (f"{rows} processed rows fit ({ambiguous} ambiguous tokens accepted either "
                   f"way); smallest p = {worst['p_value']:.2g} ({worst['row']}, {worst['test']})")
    return not failed, message, worst

