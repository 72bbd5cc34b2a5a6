"""Deliberately wrong kernels, each re-creating a bug seen in the field. Each must FAIL the
check named in its entry, at the budget named there (the self-test in tests/ runs them)."""

from kernels import Mutant

_S = "kernels.mutants.sample_mutants:"

MUTANTS: dict[str, dict[str, Mutant]] = {
    "sample": {
        "fp32-noise-floor": Mutant(_S + "noise_floor", ("tail",), "standard",
                                   "float32 exponential noise floored at 2^-24: rare tokens "
                                   "far below the head never win"),
        "topk-truncated": Mutant(_S + "topk_truncated", ("tail",), "quick",
                                 "a fast path races only the top 1024 tokens: the long tail "
                                 "is never sampled"),
        "gumbel-u-one": Mutant(_S + "gumbel_u_one", ("validity",), "quick",
                               "uniform drawn in (0, 1]: u = 1 gives infinite Gumbel noise, "
                               "-inf + inf = NaN wins the argmax on a masked token"),
        "clamped-probs": Mutant(_S + "clamped_probs", ("validity",), "quick",
                                "probs clamped to float32 eps 'to avoid log(0)': "
                                "zero-probability tokens get sampled"),
        "unseeded": Mutant(_S + "unseeded", ("validity",), "quick",
                           "the seed is ignored and the global generator used: the same "
                           "(probs, seed) gives different ids"),
        "keepdim-ids": Mutant(_S + "keepdim_ids", ("validity",), "quick",
                              "argmax(keepdim=True): ids of shape [B, 1]"),
        "shared-noise": Mutant(_S + "shared_noise", ("independence",), "quick",
                               "one noise vector broadcast to every row: identical rows "
                               "always agree"),
        "seed-row-overlap": Mutant(_S + "seed_row_overlap", ("independence",), "quick",
                                   "Philox stream chosen as seed + row: row i+1 of seed s "
                                   "repeats row i of seed s+1"),
        "double-softmax": Mutant(_S + "double_softmax",
                                 ("fit_curated", "fit_generated", "fit_large_vocab"), "quick",
                                 "softmax applied to probs as if they were logits"),
        "row-shift": Mutant(_S + "row_shift", ("fit_curated",), "quick",
                            "row i sampled from row i-1's probs (an off-by-one row pointer)"),
        "raises": Mutant(_S + "raises", ("validity",), "quick",
                         "the kernel raises (an illegal memory access)"),
        "hangs": Mutant(_S + "hangs", ("validity",), "quick", "the kernel never returns"),
    },
}
