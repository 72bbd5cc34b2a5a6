"""The two-sample test of a survivor's law: chi-square of homogeneity, row by row.

Two samples of ``M`` outcome tables each, int64 [M, B, W] (B rows, a row's W ids one
categorical outcome; harness/mutate/law.py draws them and plans ``M``).

The test (``homogeneity``). Row r: the counts of each outcome in the original's ``M`` draws
and the mutant's ``M`` form a 2 x k table; outcomes are pooled into at most ``CELLS`` = 32
cells of about equal mass, each expecting at least 5 draws in each sample
(``stats.chisquare.pool_bins`` on the outcomes' pooled counts, as the family's coarse fit
tests pool tokens into <= 32 equal-mass bins), and Pearson's statistic ``X_r^2``
(``scipy.stats.chi2_contingency``, no continuity correction) is asymptotically
chi^2(k_r - 1) when both samples have one law. Rows of one call are independent given
distinct seeds (the family's independence check holds the kernel to that), so
``X^2 = sum_r X_r^2`` is chi^2(df = sum_r (k_r - 1)) under H0, and the test rejects at
``p = chi2.sf(X^2, df) < alpha``, ``alpha = ALPHA = 1e-3``: a false rejection (a re-keying
mutant reported as a gap) has probability 1e-3 per mutant tested.

Power. Against laws ``p_r`` (original) and ``q_r`` (mutant) on the pooled cells, with ``M``
draws each, the statistic is asymptotically noncentral chi^2(df, lambda) with
``lambda = (M / 2) * D``, ``D = sum_r sum_j (p_rj - q_rj)^2 / m_rj``, ``m = (p + q) / 2``:
the chi-square distance of the two laws from their mixture, summed over the rows. The
noncentrality ``lambda*`` at which the level-alpha test has power ``POWER`` = 0.99 (the
doctrine's; ``stats.chisquare.noncentrality_for_power``, from ``scipy.stats.ncx2``) gives the
smallest detectable distance ``D* = 2 lambda* / M``; since ``sum_j (p - q)^2 / m >=
(sum_j |p - q|)^2 = 4 TV^2`` (Cauchy-Schwarz), every pair of laws at total variation
``>= detectable_tv(M, df, R) = sqrt(lambda* / (2 M R))`` on each of the ``R`` rows tested
is detected with power 0.99. Both statements are on the pooled cells: a change of law inside
a cell, or on a row with a single cell, is not seen.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import stats

from sampling_harness.stats.chisquare import noncentrality_for_power, pool_bins, pooled

ALPHA = 1e-3               # a re-keying mutant is reported as a gap with this probability
POWER = 0.99               # the power at which the detectable deviation is stated
CELLS = 32                 # outcomes of a row pooled into at most this many equal-mass cells
PAD = -1                   # fills a short row of ids (lists of drafts)


def stacked(rows: list[torch.Tensor]) -> torch.Tensor:
    """[M, B, W] from M outcome tables [B, W_i], short ones padded with -1 on the right."""
    width = max(r.shape[1] for r in rows)
    return torch.stack([r if r.shape[1] == width else torch.nn.functional.pad(
        r, (0, width - r.shape[1]), value=PAD) for r in rows])


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


def pooled_table(table: np.ndarray, cells: int = CELLS) -> np.ndarray:
    """One row's 2 x k table with its outcomes pooled into at most ``cells`` cells of about
    equal mass, each expecting >= 5 draws in each sample (expected_ij = n_i c_j / N: a cell
    is whole when c_j min(n_i) / N >= 5); pooled on the column totals only, which carry no
    information on which sample a draw came from under H0."""
    sizes = table.sum(axis=1)
    expected = table.sum(axis=0) * sizes.min() / sizes.sum()
    labels = pool_bins(expected, max_bins=cells)
    return np.stack([pooled(table[0], labels), pooled(table[1], labels)])


def row_statistic(table: np.ndarray, cells: int = CELLS) -> tuple[float, int]:
    """Pearson's X^2 of homogeneity of one row's 2 x k table on its pooled cells
    (``pooled_table``): (statistic, k' - 1), (0, 0) when fewer than two cells remain."""
    merged = pooled_table(table, cells)
    if merged.shape[1] < 2:
        return 0.0, 0
    result = stats.chi2_contingency(merged, correction=False)
    return float(result.statistic), int(result.dof)


def cell_df(first: torch.Tensor, second: torch.Tensor, cells: int = CELLS) -> tuple[int, int]:
    """(df, rows tested) of the test of these samples: what the pooled cells alone decide,
    without the statistic (``law_test`` plans its draws from it)."""
    shapes = [pooled_table(table, cells).shape[1] for table in cell_counts(first, second)]
    return sum(k - 1 for k in shapes if k > 1), sum(k > 1 for k in shapes)


def detectable_tv(draws: int, df: int, rows: int, alpha: float = ALPHA,
                  power: float = POWER) -> float:
    """The smallest total variation, on every one of ``rows`` rows tested (on the pooled
    cells), that the test over ``draws`` draws a kernel on ``df`` df detects with ``power``
    at ``alpha``: ``sqrt(lambda* / (2 draws rows))`` (module doc)."""
    return math.sqrt(noncentrality_for_power(df, alpha, power) / (2.0 * draws * rows))


def planned_draws(df: int, rows: int, tv: float, alpha: float = ALPHA,
                  power: float = POWER) -> int:
    """The draws a kernel at which the test on ``df`` df over ``rows`` rows detects a total
    variation ``tv`` on every row with ``power`` at ``alpha``: ``lambda* / (2 rows tv^2)``,
    rounded up (the inverse of ``detectable_tv``)."""
    return math.ceil(noncentrality_for_power(df, alpha, power) / (2.0 * rows * tv * tv))


def homogeneity(first: torch.Tensor, second: torch.Tensor, alpha: float = ALPHA,
                power: float = POWER, cells: int = CELLS) -> dict:
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
        x, k = row_statistic(table, cells)
        statistic, df, tested = statistic + x, df + k, tested + (k > 0)
    body = {"draws": draws, "rows": rows, "rows_tested": tested, "statistic": statistic,
            "df": df, "alpha": alpha, "power": power}
    if df == 0:
        return {**body, "p_value": None, "rejected": None}
    lam = noncentrality_for_power(df, alpha, power)
    p_value = float(stats.chi2.sf(statistic, df))
    return {**body, "p_value": p_value, "rejected": p_value < alpha, "noncentrality": lam,
            "distance": 2.0 * lam / draws, "tv": math.sqrt(lam / (2.0 * draws * tested))}
