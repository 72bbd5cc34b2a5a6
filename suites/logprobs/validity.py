"""Validity of family ``logprobs``: exact, no alpha.

Every call is validated by the runner (suites/logprobs/contract.py): values float32 [B, K]
with -inf exactly at every padding slot, never NaN or +inf; ranks int64 [B, K] in [1, V].
This check adds edge batches (V = 1, K = 1, a row of padding only, padding in every slot
but one), each called twice under two allocator poisons in every mode (the same output is
due), and the independence of padding: masking any one slot of a batch leaves every other
slot's value and rank unchanged.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.suites.logprobs.batches import curated
from sampling_harness.suites.logprobs.contract import MODES
from sampling_harness.suites.logprobs.runs import on_device, run_modes
from sampling_harness.verdict import Outcome


def edge_batches(seed: int) -> dict[str, dict]:
    rng = np.random.default_rng(seed)
    one = {"logits": torch.tensor([[0.5]]), "token_ids": torch.tensor([[0, -1]]),
           "temperature": torch.tensor([0.7]), "top_k": torch.tensor([1]),
           "top_p": torch.tensor([0.5])}
    single = curated(129, torch.float32, seed)
    single["token_ids"] = single["token_ids"][:, :1].clamp(min=0)
    sparse = curated(33, torch.float16, seed + 1)
    keep = rng.integers(sparse["token_ids"].shape[1], size=sparse["token_ids"].shape[0])
    ids = torch.full_like(sparse["token_ids"], -1)
    ids[torch.arange(ids.shape[0]), keep] = sparse["token_ids"][:, 0]
    sparse["token_ids"] = ids
    return {"V = 1": one, "K = 1": single, "one id per row": sparse}


def padding_independence(ctx, batch: dict) -> list[str]:
    """Mask each slot in turn; the other slots must not move."""
    problems = []
    ids = batch["token_ids"].to(ctx.device)
    for mode in MODES:
        full, full_ranks = ctx.runner.call({**on_device(batch, ctx.device), "mode": mode},
                                           ctx.seed)
        for slot in range(ids.shape[1]):
            masked = {**batch, "token_ids": ids.clone().cpu()}
            masked["token_ids"][:, slot] = -1
            values, ranks = ctx.runner.call({**on_device(masked, ctx.device), "mode": mode},
                                            ctx.seed)
            others = torch.ones_like(ids, dtype=torch.bool)
            others[:, slot] = False
            moved = others & (values != full) & ~(values.isinf() & full.isinf())
            if full_ranks is not None and ranks is not None:
                moved |= others & (ranks != full_ranks) & (ids >= 0)
            if bool(moved.any()):
                row, col = (int(i) for i in moved.nonzero()[0])
                problems.append(f"{mode}: masking slot {slot} changed row {row}, slot {col}")
    return problems


def validity(ctx) -> Outcome:
    calls = 0
    for name, batch in edge_batches(ctx.seed).items():
        run_modes(ctx, name, batch, twice=True)
        calls += 2 * len(MODES)
    problems = padding_independence(ctx, curated(65, torch.bfloat16, ctx.seed))
    if problems:
        return Outcome(False, f"padding is not independent: {problems[0]}")
    return Outcome(True, f"{ctx.runner.calls} calls valid; edge batches gave the same output "
                         "under two allocator poisons in every mode; masking any slot moved "
                         "no other", samples=ctx.runner.calls, min_detectable_effect=1.0,
                   effect="slots wrong at padding or moved by masking another (any one fails)")
