"""Independence of draws: rows (or requests) of one call, and calls with seeds s and s + 1.

Identical rows are drawn in two calls with adjacent seeds s and s + 1 (the seeds most likely
to collide in a badly keyed generator); X and Y are the outcomes of a pairing:

* adjacent rows of one call;  the same row under s and s + 1;  row i + 1 under s against
  row i under s + 1, and row i under s against row i + 1 under s + 1 (streams keyed by
  seed + row overlap exactly there).

Under independence P(X = a, Y = b) = p_a p_b. Each pairing takes two tests against that law
(``sampling_harness.stats.independence.pair_tests``): a one-sided exact binomial test of an
excess of agreement, P(X = Y) = sum p^2, and a Pearson chi-square of the K x K joint table
of the K outcomes in the support. The verdict (``pairings_outcome``) takes every test at the
same Bonferroni share of the check's alpha.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.stats.independence import pairings_verdict
from sampling_harness.verdict import Outcome

# 8 tokens over V = 4099 at the edges of 1024- and 2048-wide blocks (``sample`` and
# ``sample-logits`` draw from a row uniform over them).
SPREAD = (0, 1, 1023, 1024, 2047, 2048, 4097, 4098)

ROW_EFFECT = "agreement rate P(X = Y) of a pair (independent: sum p^2 <= 1/8)"


def pairings(a: torch.Tensor, b: torch.Tensor,
             unit: str = "row") -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The four pairings of outcomes ``a`` (seed s) and ``b`` (seed s + 1), one per row or
    request (``unit``), by name."""
    return {f"adjacent {unit}s": (a[0::2], a[1::2]),
            f"same {unit}, seeds s, s+1": (a, b),
            f"{unit} i+1 at s, {unit} i at s+1": (a[1:], b[:-1]),
            f"{unit} i at s, {unit} i+1 at s+1": (a[:-1], b[1:])}


def support_index(support: np.ndarray, size: int, device) -> torch.Tensor:
    """int64 [size] on ``device``: outcome -> its index in ``support`` (-1 outside it)."""
    index = torch.full((size,), -1, dtype=torch.int64, device=device)
    index[torch.as_tensor(support, device=device)] = torch.arange(support.size, device=device)
    return index


def pairings_outcome(ctx, results: list[dict], samples: int, alpha: float,
                     effect: str = ROW_EFFECT) -> Outcome:
    """The verdict over every (row, pairing) result of ``pair_tests``, each test at
    ``alpha``: the largest joint chi-square, the largest detectable agreement."""
    passed, message, p_value = pairings_verdict(results, alpha)
    return Outcome(passed, message, statistic=max(r["joint_chi2"] for r in results),
                   p_value=p_value, alpha=ctx.alpha, samples=samples,
                   min_detectable_effect=max(r["min_detectable_agreement"] for r in results),
                   effect=effect, details={"pairings": results, "alpha_per_test": alpha})
