"""The checks of family ``coin``: functions ``check(ctx) -> Outcome``, ``ctx`` a
``sampling_harness.run.check_context.CheckContext``. Every call goes through
``ctx.runner``, which validates its output (contract.validate)."""

import numpy as np
import torch

from sampling_harness.stats.binomial import never_rate
from sampling_harness.stats.chisquare import samples_for_tv
from sampling_harness.stats.fit import chisquare_fit
from sampling_harness.stats.multiple import adjusted_p, bonferroni
from sampling_harness.verdict import Outcome

BIASES = (0.5, 0.25, 0.05)      # P(heads) of the coins of the fit check


def coins(heads, device) -> torch.Tensor:
    """A probs table: one row (1 - p, p) per P(heads) p."""
    p = torch.tensor(heads, dtype=torch.float32, device=device)
    return torch.stack([1 - p, p], dim=1)


def validity(ctx) -> Outcome:
    """Exact, no alpha: odd shapes twice with one seed under two allocator poisons (the same
    ids are due), then many certain coins (a side of probability 0 never comes up)."""
    seeds = ctx.seeds()
    for heads in ([0.0, 1.0], [1.0], [0.5] * 65):
        ctx.runner.call_twice({"probs": coins(heads, ctx.device)}, next(seeds))
    certain = coins([0.0, 1.0], ctx.device).repeat(ctx.budget.certain_draws // 2, 1)
    ctx.runner.call({"probs": certain}, next(seeds))
    draws = certain.shape[0]
    return Outcome(True, f"{ctx.runner.calls} calls valid; no side of probability 0 in "
                         f"{draws:,} flips of certain coins",
                   samples=draws, min_detectable_effect=never_rate(draws, ctx.budget.power),
                   effect="per-flip rate of a side of probability 0")


def fit(ctx) -> Outcome:
    """Statistical: each coin's heads count against its bias, a Pearson chi-square on the
    two sides at the check's alpha split over the coins (Bonferroni), with as many flips
    as detecting an error of ``budget.tv`` in P(heads) with ``budget.power`` takes."""
    alpha = bonferroni(ctx.alpha, len(BIASES))
    flips = samples_for_tv(ctx.budget.tv, 1, alpha, ctx.budget.power)   # per coin
    table = coins(BIASES, ctx.device)
    seeds, heads, done = ctx.seeds(), np.zeros(len(BIASES)), 0
    ctx.plan(flips * len(BIASES))
    while done < flips:
        rows = min(flips - done, ctx.max_call_elements // table.numel())
        ids = ctx.runner.call({"probs": table.repeat(rows, 1)}, next(seeds))
        heads += ids.view(rows, len(BIASES)).sum(dim=0).cpu().numpy()
        done += rows
    fits = [chisquare_fit(np.array([flips - h, h]), law, alpha, ctx.budget.power)
            for h, law in zip(heads, table.double().cpu().numpy(), strict=True)]
    i = min(range(len(BIASES)), key=lambda j: fits[j].p_value)     # the worst coin
    mde = max(f.min_detectable_tv for f in fits)
    return Outcome(
        fits[i].p_value > alpha,
        f"worst coin: P(heads) {BIASES[i]} came up heads {heads[i] / flips:.4f} of "
        f"{flips:,} flips (chi2 = {fits[i].statistic:.1f}, p = {fits[i].p_value:.2g}, alpha "
        f"per coin {alpha:.2g}); an error of {mde:.3g} in P(heads) is detected with power "
        f"{ctx.budget.power}",
        statistic=fits[i].statistic, p_value=adjusted_p([f.p_value for f in fits]),
        alpha=ctx.alpha, samples=flips * len(BIASES), min_detectable_effect=mde,
        effect=f"absolute error in P(heads) of one coin (target {ctx.budget.tv:g})",
        details={"biases": list(BIASES), "heads": heads.tolist(), "flips_per_coin": flips})
