"""The top-k and top-p boundaries of family ``sample-logits``, each carrying real mass.

Small rows (a few live tokens, the rest far below) in which every boundary decision moves
a large share of the probability, so that a wrong decision is a large deviation:

* top-k landing inside a run of ties: every tied token is kept (k = 3 in 3, 2, 1, 1, 1;
  k = 7 with the 7th and 8th largest tied);
* the token that crosses top_p is kept (probabilities 0.5, 0.3, 0.15, 0.05 at top_p 0.7:
  the 0.3 token's mass before it, 0.5, is < 0.7);
* top-p on the renormalised top-k set, not on the full row (0.3, 0.2, 0.1, 0.1 and six
  0.05s: top-k 3 keeps the first four; renormalised, top_p 0.55 keeps two tokens; top-p
  first would keep the tied 0.1s too);
* tiny top_p (the head alone), top_p just under 1, and an exact tie straddling top_p (an
  ambiguous pair, accepted either way);
* the same rows at temperature 0.7, so the boundaries are found on scaled logits;
* min-p (for a kernel that takes ``min_p``; skipped and said so otherwise): tokens tied
  above the threshold all kept, min_p 1 keeping the tied maxima, min-p on the scaled logits
  (at T = 0.7 min-p on the raw logits keeps two more tokens), and top-p on the set min-p
  keeps, renormalised (top-p first would keep a second token), and three tied tokens
  exactly at the threshold (ambiguous: accepted kept or masked, and counted).

Each row is tested by fit.py against the reference; the draws are planned for the
budget's ``boundary_tv``. Alpha: the check's share over its tests.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.families import accepts
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.suites.sample_logits.fit import TESTS_PER_ROW, fit_rows, outcome
from sampling_harness.suites.sample_logits.rows import Rows
from sampling_harness.verdict import Outcome

VOCAB = 67
FLOOR = -30.0  # the filler tokens: e^-30 of the head, negligible but kept


def row(live: dict[int, float], seed: int) -> np.ndarray:
    """A row of VOCAB logits: ``live`` {rank: logit} placed at shuffled positions, filler
    tokens at FLOOR."""
    x = np.full(VOCAB, FLOOR)
    slots = np.random.default_rng(seed).permutation(VOCAB)
    for rank, value in live.items():
        x[slots[rank]] = value
    return x


def log_probs(*probs: float) -> dict[int, float]:
    return dict(enumerate(np.log(probs)))


def boundary_rows(seed: int, t: float) -> Rows:
    """The rows above at temperature ``t`` (logits scaled by t, so z is the same row)."""
    def scaled(live: dict[int, float]) -> dict[int, float]:
        return {r: t * v for r, v in live.items()}

    three_way = scaled({0: 3.0, 1: 2.0, 2: 1.0, 3: 1.0, 4: 1.0})
    seventh = scaled(dict(enumerate((2.0, 2.0, 1.0, 1.0, 1.0, 0.5, 0.0, 0.0))))
    crossing = scaled(log_probs(0.5, 0.3, 0.15, 0.05))
    renormalised = scaled(log_probs(0.3, 0.2, 0.1, 0.1, *[0.05] * 6))
    straddle = scaled(log_probs(0.4, 0.3, 0.3))
    return Rows.of({
        f"T={t}: top-k 3 inside a 3-way tie": (row(three_way, seed), t, 3, 1.0),
        f"T={t}: top-k 7, the 7th and 8th tied": (row(seventh, seed + 1), t, 7, 1.0),
        f"T={t}: top-p 0.7 keeps the crossing token": (row(crossing, seed + 2), t, 0, 0.7),
        f"T={t}: top-p 0.55 on the renormalised top-k 3": (
            row(renormalised, seed + 3), t, 3, 0.55),
        f"T={t}: top-p 1e-3 keeps the head alone": (row(crossing, seed + 4), t, 0, 1e-3),
        f"T={t}: top-p just under 1": (row(crossing, seed + 5), t, 0, 1.0 - 2.0**-20),
        f"T={t}: a tie straddling top-p 0.55": (row(straddle, seed + 6), t, 0, 0.55),
    })


def min_p_rows(seed: int) -> Rows:
    """min-p boundaries (reference/min_p.py), at T = 1 and 0.7 (logits scaled so z is the
    same). Each threshold lies far from every token, except in the row that puts three tied
    tokens exactly at it: ambiguous, accepted either way (all together: ties are resolved
    alike) and counted."""
    rows = {}
    for i, t in enumerate((1.0, 0.7)):
        tied = {r: t * v for r, v in log_probs(0.4, 0.2, 0.2, 0.2).items()}
        maxima = {r: t * v for r, v in enumerate((2.0, 2.0, 1.0, 0.5))}
        scaled = {r: t * v for r, v in enumerate((0.0, -1.0, -2.0, -2.2))}
        before_top_p = {r: t * v for r, v in log_probs(0.5, 0.3, 0.1, 0.1).items()}
        rows |= {
            f"T={t}: min-p 0.45 keeps the three tied at 0.2": (
                row(tied, seed + 10 * i), t, 0, 1.0, 0.45),
            f"T={t}: min-p 1 keeps both tied maxima": (row(maxima, seed + 10 * i + 1), t, 0,
                                                       1.0, 1.0),
            f"T={t}: min-p 0.15 on the scaled logits": (row(scaled, seed + 10 * i + 2), t, 0,
                                                        1.0, 0.15),
            f"T={t}: top-p 0.6 on the renormalised min-p 0.25 set": (
                row(before_top_p, seed + 10 * i + 3), t, 0, 0.6, 0.25),
            f"T={t}: min-p 0.5 exactly at the tied 0.2s (ambiguous)": (
                row(tied, seed + 10 * i + 4), t, 0, 1.0, 0.5),
        }
    return Rows.of(rows)


def boundaries(ctx) -> Outcome:
    min_p = accepts(ctx.runner.kernel.fn, "min_p")
    tables = [min_p_rows(ctx.seed + 14)] if min_p else []
    tables += [boundary_rows(ctx.seed, 1.0), boundary_rows(ctx.seed + 7, 0.7)]
    alpha = bonferroni(ctx.alpha, TESTS_PER_ROW * sum(t.kinds for t in tables))
    tv = ctx.budget.boundary_tv
    results = [r for rows in tables for r in fit_rows(ctx, rows, tv, alpha)]
    result = outcome(ctx, results, alpha, tv)
    if not min_p:
        result.message += "; min-p rows skipped: the kernel takes no min_p"
    return result
