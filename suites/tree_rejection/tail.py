"""Tail of family ``tree-rejection``: are rare residual tokens drawn as often as they should be?

At each rarity scale r the target row p, after every path, is ``sample``'s tail row (one
head, M rare tokens of probability r times the head's, suites/sample/distributions.py)
with a decoy d of probability 0 inserted at a random column; the draft row q puts 1/2 on d
and 1/2 on the head. Calls alternate between two trees of one child at the root: listed,
the child is d (never accepted: the first token is drawn from p without d), and drawn, the
child is drawn from q (d is rejected and the first token drawn from the residual
max(p - q, 0), whose head the kernel must lower by 1/2; the head is accepted). Either way
the first returned token follows p (the contract; reference/tree_rejection.py
``first_token_law`` gives both laws exactly, equal within 1e-6), so the count of rare first
tokens in n trees is Binomial(n, R), R the exact rare mass, tested by the exact,
equal-tailed, group-sequential test of harness/checks/rare_wins.py (looks at 1/8, 1/4, 1/2 and all
of the planned trees, each at alpha / 4, Bonferroni over the scales). The planned n makes
the expected rare tokens ``budget.tail_expected``. A race on float32 exponential noise
(floor 2^-24) loses the rare tokens once r << 6e-8: at r = 1e-8 it draws almost none.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.rare_wins import (
    LONG_ROW,
    scale_label,
    scale_sweep,
    tail_outcome,
    tail_row,
)
from sampling_harness.reference.tree_rejection import first_token_law
from sampling_harness.verdict import Outcome

AGREE = 1e-6          # listed and drawn rare masses agree within this relative gap


def tail_laws(scale: float, seed: int, vocab: int = LONG_ROW
              ) -> tuple[np.ndarray, np.ndarray, int, int, np.ndarray]:
    """(p, q, d, head, rare mask) over V = M + 2 tokens, float32 p and q."""
    row, rare = tail_row(scale, vocab - 1, seed)
    d = int(np.random.default_rng(seed + 1).integers(row.size + 1))
    p = np.insert(row, d, 0.0).astype(np.float32)
    rare = np.insert(rare, d, False)
    head = int(np.flatnonzero(~rare & (p > 0))[0])
    q = np.zeros_like(p)
    q[[d, head]] = 0.5
    return p, q, d, head, rare


def rare_mass(p, q, d: int, rare: np.ndarray) -> float:
    """The exact rare mass of the first token, the same (within AGREE) in both modes."""
    listed = float(np.sum(np.sort(first_token_law(p, q, child_tokens=[d])[rare])))
    drawn = float(np.sum(np.sort(first_token_law(p, q, k=1)[rare])))
    if abs(listed - drawn) > AGREE * listed:
        raise ValueError(f"rare masses {listed:g} (listed) and {drawn:g} (drawn) differ")
    return (listed + drawn) / 2


def tail(ctx) -> Outcome:
    seeds = ctx.rank_seeds()

    def setup(scale, vocab):
        p, q, d, head, rare = tail_laws(scale, ctx.seed, vocab)
        vocab, device = p.size, ctx.device
        trees = max(1, ctx.max_call_elements // (2 * vocab))
        target = torch.as_tensor(p, device=device).expand(trees, 2, vocab).contiguous()
        draft = torch.as_tensor(q, device=device).expand(trees, 2, vocab).contiguous()
        parents = torch.full((trees, 1), -1, dtype=torch.int64, device=device)
        rare_t = torch.as_tensor(rare, device=device)
        generator = torch.Generator(device=device)
        turn = [0]

        def draw(count):
            n, drawn = min(count, trees), turn[0] % 2 == 1
            turn[0] += 1
            tokens = torch.full((n, 1), d, dtype=torch.int64, device=device)
            if drawn:
                generator.manual_seed(next(seeds))
                heads = torch.rand((n, 1), generator=generator, device=device) < 0.5
                tokens = torch.where(heads, head, tokens)
            out = ctx.runner.call({"draft_token_ids": tokens, "parent_ids": parents[:n],
                                   "draft_probs": draft[:n] if drawn else None,
                                   "target_probs": target[:n],
                                   "greedy": torch.zeros(n, dtype=torch.bool, device=device)},
                                  next(seeds))
            return int(rare_t[out[:, 0]].sum()), n
        return rare_mass(p, q, d, rare), 2 * vocab, draw

    scales, alpha_look = scale_sweep(ctx, ctx.budget.tail_scales, ctx.budget.tail_expected,
                                     setup)
    return tail_outcome(ctx, scales, alpha_look, "the target's exact rare mass",
                        describe=lambda s: (
                            f"rare tokens at {scale_label(s)} x head were the first token "
                            f"{s['rare_wins']} times in {s['rows']:,} trees where "
                            f"{s['expected']:.1f} were expected"),
                        events="rare first tokens")
