"""Non-finite and padded input of family ``sample-logits``: exact, no statistics, no alpha.

The contract (suites/sample_logits/contract.py): a row holding a NaN or a +inf logit, or
nothing finite, is invalid and gets the sentinel id 0; every other row's id is what it
would be without it. The runner validates every call (ids in [0, V), the sentinel at
invalid rows). This check builds, at vocabularies off every block size (primes 131 and
4099, and 151936 + 1, where a kernel padding its rows to a block multiple has padding), a
clean batch of mixed settings (greedy, no filter, top-k, top-p, min-p for a kernel that
takes it; 12 rows, 3 at V = 151937) whose logits all lie below 0 (log-probabilities:
padding read as 0 outweighs the whole row), draws it once, then poisons every other row,
each with another poison and a clean row on each side, and draws again with the same seed
(three calls per vocabulary: the interpreter pays per call):

* every batch-mate of the poisoned row returns exactly its clean id (a NaN that leaks into
  a shared reduction, a max or an argmax across rows, a noise offset that shifts);
* the poisoned row returns the sentinel (its NaN never reaches an argmax as garbage: the
  crash of FlashInfer issue 2402) and every id stays in [0, V) (padding past the
  vocabulary's end never wins: the vLLM advisory at V = 151936).

Poisons: every logit NaN, one NaN, every logit -inf, one +inf, +inf tied with +inf, a NaN
in a greedy row (at V = 151937 the greedy NaN and every logit NaN, a clean row beside
them), and a whole batch of invalid rows.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.errors import KernelFailure
from sampling_harness.families import accepts
from sampling_harness.verdict import Outcome

NAN, INF = float("nan"), float("inf")
CASES = ((131, 12), (4099, 12), (151937, 3))   # (V, rows): primes, and 151936 + 1
SETTINGS = ((0.0, 0, 1.0, 0.0), (1.0, 0, 1.0, 0.0), (0.8, 20, 1.0, 0.0), (1.3, 0, 0.9, 0.0),
            (0.7, 0, 1.0, 0.05), (1.0, 5, 0.8, 0.1))   # (T, top-k, top-p, min-p) per row


def poisons(vocab: int) -> dict[str, object]:
    """name -> a function of a clean row giving the poisoned one (a copy)."""
    j = vocab // 3

    def at(value, *cols):
        def poison(row):
            out = row.clone()
            out[list(cols)] = value
            return out
        return poison

    return {"every logit NaN": lambda row: torch.full_like(row, NAN),
            "one NaN": at(NAN, j),
            "every logit -inf": lambda row: torch.full_like(row, -INF),
            "one +inf": at(INF, j),
            "+inf tied with +inf": at(INF, j, vocab - 1)}


def clean_batch(vocab: int, rows: int, seed: int, min_p: bool, device) -> dict:
    """``rows`` rows of log-probabilities (every logit < 0) with SETTINGS in turn; some -inf."""
    rng = np.random.default_rng(seed)
    x = torch.log_softmax(torch.as_tensor(rng.standard_normal((rows, vocab)) * 2.0), dim=1)
    x[torch.as_tensor(rng.random((rows, vocab)) < 0.1)] = -INF
    x[:, 0] = x[:, 0].clamp(min=-30.0)   # a finite entry in every row
    settings = [SETTINGS[r % len(SETTINGS)] for r in range(rows)]
    inputs = {"logits": x.to(torch.float32).to(device),
              "temperature": torch.tensor([s[0] for s in settings], device=device),
              "top_k": torch.tensor([s[1] for s in settings], device=device),
              "top_p": torch.tensor([s[2] for s in settings], device=device)}
    if min_p:
        inputs["min_p"] = torch.tensor([s[3] for s in settings], device=device)
    return inputs


def poisoned(inputs: dict, rows: dict[int, object]) -> dict:
    """A copy of ``inputs`` with each row r of ``rows`` replaced by rows[r](row r)."""
    out = dict(inputs)
    out["logits"] = inputs["logits"].clone()
    for row, poison in rows.items():
        out["logits"][row] = poison(inputs["logits"][row])
    return out


def demand_untouched(clean: torch.Tensor, ids: torch.Tensor, rows: dict[int, str]) -> None:
    """Every row not in ``rows`` equal to its clean id, else KernelFailure naming the first
    moved row and the poisoned rows of the batch."""
    moved = [r for r in (ids != clean).nonzero()[:, 0].tolist() if r not in rows]
    if moved:
        r = moved[0]
        poisons_at = ", ".join(f"{what} at row {row}" for row, what in rows.items())
        raise KernelFailure(f"batch-mate row {r} moved from token {int(clean[r])} to "
                            f"{int(ids[r])} (same seed) when the batch held {poisons_at} "
                            f"({len(moved)} rows moved)")


def poison_plan(vocab: int, rows: int) -> dict[int, tuple[str, object]]:
    """Each poison at its own odd row (a clean row on each side), a NaN in the greedy row 0."""
    kinds = list(poisons(vocab).items())
    plan = {2 * i + 1: kind for i, kind in enumerate(kinds) if 2 * i + 1 < rows}
    plan[0] = ("a NaN in a greedy row", poisons(vocab)["one NaN"])
    return plan


def non_finite(ctx) -> Outcome:
    min_p = accepts(ctx.runner.kernel.fn, "min_p")
    seeds = ctx.seeds()
    for vocab, rows in CASES:
        inputs = clean_batch(vocab, rows, ctx.seed + vocab, min_p, ctx.device)
        seed = next(seeds)
        clean = ctx.runner.call(inputs, seed)
        plan = poison_plan(vocab, rows)
        ids = ctx.runner.call(poisoned(inputs, {r: p for r, (_, p) in plan.items()}), seed)
        demand_untouched(clean, ids, {r: f"V={vocab}: {what}" for r, (what, _) in plan.items()})
        every = dict(inputs, logits=torch.full_like(inputs["logits"], NAN))
        every["logits"][1:, ::2] = -INF
        ctx.runner.call(every, seed)   # validated: the sentinel at every row
    note = "" if min_p else "; min-p rows skipped: the kernel takes no min_p"
    return Outcome(True, f"poisoned rows at V = {', '.join(str(v) for v, _ in CASES)}: the "
                         f"sentinel at every invalid row, batch-mates unmoved, ids in "
                         f"range{note}", samples=ctx.runner.calls,
                   effect="exact: any damage fails")
