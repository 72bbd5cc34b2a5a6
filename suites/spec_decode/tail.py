"""Tail of family ``spec-decode``: does the proposer draw rare draft tokens as often as the
draft model says?

The proposer is called directly (not through the engine), with a draft model of context 0:
``draft_table`` is one float32 row of logits, log of ``sample``'s tail row at scale r (one
head, M rare tokens of probability r times the head's, suites/sample/distributions.py), so
every request's first draft is drawn from softmax of that row whatever its tokens. Each call
sends R requests of one token with room to draft (K = 1, max_model_len far away, no
lookahead); each must return exactly one draft. The count of rare drafts in n requests is
Binomial(n, R), R the rare mass of the float64 softmax of the float32 logits, tested by the
exact, equal-tailed, group-sequential test of harness/checks/rare_wins.py (looks at 1/8, 1/4,
1/2 and all of the planned requests, each at alpha / 4, Bonferroni over the scales). The planned n
makes the expected rare drafts ``budget.tail_expected``.

A float32 softmax of these logits errs by a few ulp per token (relative 1e-6 of R at most),
far below the smallest detectable shortfall. A proposer racing on float32 exponential noise
(floor 2^-24 on CUDA; vLLM's draft sampling before PR 43150) draws almost no rare token at
r = 1e-8.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.rare_wins import scale_label, scale_sweep, tail_outcome, tail_row
from sampling_harness.errors import KernelFailure
from sampling_harness.verdict import Outcome

MAX_MODEL_LEN = 2**20


def softmax64(logits: np.ndarray) -> np.ndarray:
    """softmax of float32 logits, in float64 (the law the proposer must draw from)."""
    z = logits.astype(np.float64)
    w = np.exp(z - z.max())
    return w / w.sum()


def tail(ctx) -> Outcome:
    seeds = ctx.rank_seeds()

    def setup(scale, vocab):
        row, rare = tail_row(scale, vocab, ctx.seed)
        logits = np.log(row.astype(np.float64)).astype(np.float32)
        per_call = max(1, ctx.max_call_elements // row.size)
        table = torch.as_tensor(logits, device=ctx.device)[None]
        rare_t = torch.as_tensor(rare, device=ctx.device)

        def draw(count):
            n = min(count, per_call)
            drafts, _ = ctx.runner.call(
                {"draft_table": table, "context": 0, "token_ids": [[0] for _ in range(n)],
                 "previous_drafts": [[] for _ in range(n)], "num_spec_tokens": 1,
                 "max_model_len": MAX_MODEL_LEN, "lookahead": 0}, next(seeds))
            short = next((r for r, d in enumerate(drafts) if len(d) != 1), None)
            if short is not None:
                raise KernelFailure(f"request {short} of length 1 got {len(drafts[short])} "
                                    f"drafts, expected 1 (max_model_len {MAX_MODEL_LEN})")
            ids = torch.tensor([d[0] for d in drafts], device=ctx.device)
            return int(rare_t[ids].sum()), n
        return float(np.sum(np.sort(softmax64(logits)[rare]))), int(row.size), draw

    scales, alpha_look = scale_sweep(ctx, ctx.budget.tail_scales, ctx.budget.tail_expected,
                                     setup, short_rows=False)
    return tail_outcome(ctx, scales, alpha_look, "the draft law's exact rare mass",
                        describe=lambda s: (
                            f"rare draft tokens at {scale_label(s)} x head were proposed "
                            f"{s['rare_wins']} times in {s['rows']:,} drafts where "
                            f"{s['expected']:.1f} were expected"),
                        events="rare drafts")
