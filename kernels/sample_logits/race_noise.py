"""The race of triton-sample-logits in log space: x / T - log q, q ~ Exp(1) keyed by (row,
column).

q_j of row r, column j comes from the Philox counter r V + j (seed = the call's seed): word
0 folded to its distance from the nearer end of (0, 1), word 1 refining it where it is
within 2^-20 of an end, as in triton-exact (kernels/sample/triton_race.py): q resolves down
to 2^-65, so tokens 1e-10 below the head win at their rate. The noise depends on (row,
column) alone, so every race over a kept set that holds the same tokens draws the same
winner, whichever columns it reads. With per-request seeds (``seed`` a pointer to int64 [B]),
row r's counters are those of row 0 keyed by its own seed (kernels/triton_seeds.py): one
8-byte seed load per row and use.
"""

import triton
import triton.language as tl

from kernels.sample.triton_race import REFINE_BELOW, exponential, fold
from kernels.triton_seeds import philox_key


@triton.jit
def log_noise(seed, rows, cols, V):
    """log q for each (row, column): Philox counter row V + column, exact-tail exponential
    (per-request seeds: the row's seed, and row 0)."""
    key, row = philox_key(seed, rows)
    counter = row.to(tl.int64) * V + cols
    word, refine, _, _ = tl.randint4x(key, counter)
    upper, x_int = fold(word)
    tail = tl.where(x_int < REFINE_BELOW, (refine.to(tl.float32) + 0.5) * 2.3283064365386963e-10,
                    0.5)
    return tl.log(exponential(upper, x_int, tail))


@triton.jit
def finite_or_masked(x):
    """x where it is a number below +inf, -inf elsewhere: a NaN or +inf logit (an invalid
    row, whose id the wrapper replaces by the contract's sentinel) is read as masked, so no
    NaN reaches a max, a sum or an argmax."""
    return tl.where((x == x) & (x < float("inf")), x, float("-inf"))


@triton.jit
def scores(x, cutoff, t, seed, rows, cols, V):
    """x / T - log q where x >= c (and finite), -inf elsewhere (never NaN)."""
    kept = (x >= cutoff) & (x > float("-inf"))
    z = tl.where(kept, x, 0.0) / t
    return tl.where(kept, z - log_noise(seed, rows, cols, V), float("-inf"))
