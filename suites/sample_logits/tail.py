"""Tail of family ``sample-logits``: do rare tokens win as often as the processed law says?

The tail check of family ``sample`` (suites/sample/tail.py), on logits. At each scale r
a row holds one head token, M rare tokens whose processed probability is r times the
head's (logit log r), and 16 masked tokens (-inf) among them. Temperature 0.5 with the
logits halved: the division is exact. (Top-k and top-p are left off: the boundaries check
exercises them, and the sort of a sort-based kernel would make the CPU self-test of the
float32 noise floor, 2.5e9 draws, take minutes.) The count of
rare wins in n rows is Binomial(n, R), R the rare mass of the float64 processed law; the
test is exact, equal-tailed and group-sequential (looks at 1/8, 1/4, 1/2 and all of the
planned rows, each at alpha / 4; on a GPU also at 1e-8 in short rows: rare_wins.py's
``device_scales``). The planned n makes the expected rare wins
``budget.tail_expected``: noise with a floor q_min (float32 exponentials: 2^-24) loses the
rare wins once r << q_min.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from sampling_harness.checks.calls import rows_per_call
from sampling_harness.checks.rare_wins import LONG_ROW, scale_sweep, tail_outcome
from sampling_harness.suites.sample_logits.rows import Rows
from sampling_harness.verdict import Outcome

JUNK = 16
TEMPERATURE = 0.5


def tail_rows(scale: float, seed: int, vocab: int = LONG_ROW,
              rare_mass: float = 0.01) -> tuple[Rows, np.ndarray]:
    """(the row, its rare mask): M = rare_mass / scale rare tokens, capped so that the row
    has at most ``vocab`` tokens."""
    rare = int(min(max(1, round(rare_mass / scale)), vocab - 1 - JUNK))
    vocab = rare + 1 + JUNK
    rng = np.random.default_rng(seed)
    slots = rng.permutation(vocab)
    z = np.full(vocab, math.log(scale))
    z[slots[0]] = 0.0
    z[slots[1:1 + JUNK]] = -np.inf
    mask = np.zeros(vocab, bool)
    mask[slots[1 + JUNK:]] = True
    return Rows.of({f"scale {scale:g}": (z * TEMPERATURE, TEMPERATURE, 0, 1.0)}), mask


def tail(ctx) -> Outcome:
    seeds = ctx.rank_seeds()

    def setup(scale, vocab):
        rows, rare = tail_rows(scale, ctx.seed, vocab)
        inputs = rows.inputs(ctx.device, rows_per_call(ctx, rows.vocab))
        rare_t = torch.as_tensor(rare, device=ctx.device)

        def draw(count):
            batch = {name: value[:count] for name, value in inputs.items()}
            ids = ctx.runner.call(batch, next(seeds))
            return int(rare_t[ids].sum()), batch["logits"].shape[0]
        return float(np.sort(rows.law.probs[0][rare]).sum()), rows.vocab, draw

    scales, alpha_look = scale_sweep(ctx, ctx.budget.tail_scales, ctx.budget.tail_expected,
                                     setup)
    return tail_outcome(ctx, scales, alpha_look, "the processed law's rare mass")
