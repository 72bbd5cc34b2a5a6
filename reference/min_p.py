"""The min-p filter of family ``sample-logits``, in float64, with its ambiguity margin.

Order (as vLLM's v1 sampler applies it: temperature, then the argmax-invariant min-p
logits processor, then top-k and top-p): min-p runs on p = softmax(z), z = x / T the scaled
logits of the whole row, and keeps token i iff p_i >= min_p * max_j p_j, i.e.

    z_i - m >= log(min_p),   m = max_j z_j,

ties at the threshold kept (as top-k keeps ties at its boundary). min_p <= 0 keeps every
finite entry; min_p = 1 keeps the maxima (all of them, tied). The kept set is an upper set
{z >= c} of the row holding its max, so min-p and top-k commute (both keep a prefix of the
descending order); top-p then runs on the set both keep, renormalised.

Ambiguity: a float32 kernel compares p_i with fl(min_p * p_max) (or z_i - m with
fl(log min_p)). p_i and p_max carry log-space errors e_i and e_m <= e_i
(reference/processed.py), so the comparison can differ from the exact one only where
|z_i - m - log(min_p)| <= w_i + u (4 + 2 |log min_p|): the window of i (covers e_i + e_m),
the product's or the subtraction's rounding, and a faithful log. Entries inside that margin
are ambiguous; the maxima are always kept (p_max >= fl(min_p * p_max) for min_p <= 1, and
equal logits give equal probabilities). Exact ties among themselves are resolved together:
a float32 comparison is monotone in z, so tied tokens are all kept or all dropped.
"""

from __future__ import annotations

import numpy as np

U32 = 2.0**-24


def min_p_masks(z: np.ndarray, min_p: float, window: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kept, certain, possible) of the min-p filter on one scaled row ``z`` (float64, -inf
    masked), given each entry's collision window. certain <= kept <= possible; all False at
    -inf entries."""
    finite = np.isfinite(z)
    if min_p <= 0:
        return finite, finite, finite
    m = z[finite].max()
    log_min_p = float(np.log(min_p))
    gap = np.where(finite, z - m, -np.inf) - log_min_p
    margin = window + U32 * (4 + 2 * abs(log_min_p))
    kept = finite & (gap >= 0)
    certain = finite & ((gap >= margin) | (z == m))
    possible = finite & (gap >= -margin)
    return kept, certain, possible
