"""Independence of paired draws: agreement and the joint table against an independent pair.

Model: pairs (X, Y) of draws that should be independent, each with law ``p`` over K
outcomes (indices 0..K-1). Under H0 the pair has law p_a p_b, so

* agreement: the count of X = Y is Binomial(pairs, sum p^2); an exact one-sided test for
  an excess (shared or overlapping noise makes draws agree too often);
* joint: the Pearson chi-square of the K x K table of pairs against p_a p_b (every cell
  its own bin; the caller keeps K small enough that cells expect >= 5), which sees any
  dependence, not only agreement.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.reference.categorical import collision_probability, pair_probs
from sampling_harness.stats.binomial import min_detectable_rate, upper_p
from sampling_harness.stats.chisquare import chisquare_gof
from sampling_harness.stats.multiple import adjusted_p


def pair_tests(x: np.ndarray, y: np.ndarray, p: np.ndarray, alpha: float, power: float):
    """Agreement and joint-table tests of one pairing; ``x``, ``y`` are support indices."""
    k = p.size
    joint = np.bincount(x * k + y, minlength=k * k)
    joint_p = pair_probs(p, p).ravel()
    statistic, df, p_joint = chisquare_gof(joint, joint_p, np.arange(k * k))
    collision = collision_probability(p)
    agree = int((x == y).sum())
    return {"pairs": int(x.size), "agreements": agree, "expected_agreements": collision * x.size,
            "p_agreement": upper_p(agree, x.size, collision), "joint_chi2": statistic,
            "joint_df": df, "p_joint": p_joint,
            "min_detectable_agreement": min_detectable_rate(x.size, collision, alpha, power)}


def pairings_verdict(results: list[dict], alpha: float) -> tuple[bool, str, float]:
    """(passed, message, Bonferroni-adjusted p) of a set of ``pair_tests`` records, each
    naming its ``pairing`` (and optionally its ``row``), both tests at level ``alpha``."""
    p_values = [p for r in results for p in (r["p_agreement"], r["p_joint"])]
    failed = [r for r in results if min(r["p_agreement"], r["p_joint"]) <= alpha]
    if not failed:
        return True, f"{len(results)} pairings consistent with independent draws", \
            adjusted_p(p_values)
    r = failed[0]
    where = f"{r['row']}, {r['pairing']}" if "row" in r else r["pairing"]
    return False, (f"{where}: {r['agreements']} of {r['pairs']} pairs agree where "
                   f"{r['expected_agreements']:.1f} were expected (p = {r['p_agreement']:.2g}); "
                   f"joint chi2 = {r['joint_chi2']:.1f} on {r['joint_df']} df "
                   f"(p = {r['p_joint']:.2g})"), adjusted_p(p_values)
