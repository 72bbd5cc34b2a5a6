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

``sorted_race`` draws with this noise and none of the kernel's selection (torch's sort
instead): the tests' and scripts/fuzz_sample_logits.py's oracle.
"""

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.logprobs.torch_logprobs import kept_entries
from sampling_harness.kernels.sample.triton_race import REFINE_BELOW, exponential, fold
from sampling_harness.kernels.split_scratch import next_power_of_2
from sampling_harness.kernels.triton_seeds import philox_key


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
    row, given the contract's sentinel by ``_select_race``) is read as masked, so no
    NaN reaches a max, a sum or an argmax."""
    return tl.where((x == x) & (x < float("inf")), x, float("-inf"))


@triton.jit
def scores(x, cutoff, t, seed, rows, cols, V):
    """x / T - log q where x >= c (and finite), -inf elsewhere (never NaN)."""
    kept = (x >= cutoff) & (x > float("-inf"))
    z = tl.where(kept, x, 0.0) / t
    return tl.where(kept, z - log_noise(seed, rows, cols, V), float("-inf"))


@triton.jit(do_not_specialize=["seed"])
def _noise_rows(out_ptr, seed, V, BLOCK: tl.constexpr):
    """log q of every column of row ``program_id``. Memory traffic: 4 B V written a row."""
    cols = tl.arange(0, BLOCK)
    rows = tl.zeros([BLOCK], tl.int64) + tl.program_id(0)
    tl.store(out_ptr + rows * V + cols, log_noise(seed, rows, cols, V), mask=cols < V)


def sorted_race(logits, temperature, top_k, top_p, seed) -> torch.Tensor:
    """int64 [B]: the race on this noise over each row's kept set as torch-logprobs sorts it
    (threshold c = its least kept value): argmax over {x >= c, finite} of x / T - log q, the
    first maximum; greedy rows (T = 0) the first argmax of x."""
    x = logits.float()
    batch, vocab = x.shape
    safe_t = torch.where(temperature > 0, temperature, 1.0).float()
    _, keep = kept_entries(x, safe_t, top_k, top_p)
    cutoff = torch.where(keep, x, float("inf")).amin(dim=1, keepdim=True)
    noise = torch.empty((batch, vocab), dtype=torch.float32, device=x.device)
    _noise_rows[(batch,)](noise, seed, vocab, BLOCK=next_power_of_2(vocab))
    kept = (x >= cutoff) & (x > float("-inf"))
    scores = torch.where(kept, torch.where(kept, x, 0.0) / safe_t[:, None] - noise,
                         float("-inf"))
    return torch.where(temperature > 0, scores.argmax(dim=1), x.argmax(dim=1))
