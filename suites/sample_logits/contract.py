"""Family ``sample-logits``: one token per row of logits, after temperature, min-p, top-k
and top-p.

Contract::

    fn(logits, temperature, top_k, top_p, seed, *, min_p=None) -> ids

logits float32, bfloat16 or float16 [B, V] (-inf entries are masked; invalid rows below);
temperature float32 [B] (>= 0), top_k int64 [B], top_p float32 [B]; seed int in
[0, 2^31). Returns int32/int64 [B] on the logits' device. Temperature 0 means greedy: the
argmax of the logits, the lowest index on ties. Otherwise one draw from softmax of the
processed logits (reference/processed.py: logits / T, then min-p, then top-k with ties at
the boundary kept, then top-p on the renormalised result). The same inputs and seed give the
same ids; rows are independent, and so are calls with different seeds.

min-p (reference/min_p.py), an option: ``min_p`` float32 [B] in [0, 1], passed by keyword
and only in calls where some row uses it (so a kernel without the parameter keeps passing
every other check; the checks with min-p rows skip them for it and say so). Absent or 0
disables it. It keeps the tokens with p_i >= min_p * max p under softmax(logits / T) of the
whole row, ties at the threshold kept, in vLLM's order: temperature, min-p, top-k, top-p
(min-p and top-k commute; top-p runs on the renormalised set both keep). Tokens within
float32 rounding of the threshold are ambiguous, accepted either way and counted.

Invalid rows: a row holding a NaN or a +inf logit, or no finite logit at all (every entry
-inf), has no law to draw from; its id is the sentinel INVALID_ROW_ID = 0, whatever its
temperature and filters. Every other row's id is exactly what it would be without the
invalid row in the batch (same seed). Why a sentinel in [0, V) and not a flag or -1: the
ids go straight into an embedding lookup, and an out-of-range or garbage id there is the
crash of FlashInfer issue 2402 (a NaN row left the chosen index as garbage); id 0 exists in
every vocabulary, is what a zero-filled output holds, and keeps the contract's output a
single tensor (a ``valid`` flag, FlashInfer's later answer, would change every kernel's
return type). An engine that must tell such rows apart checks its logits, which it owns.

What a seed determines (harness/seeds.py): with an int seed, row r's id depends only
on (seed, r, row r's logits and settings). A kernel whose metadata says ``"seeds":
"per-request"`` also takes seed as an int64 [B] tensor on the logits' device, one seed per
request in [0, 2^31) or -1 for an unseeded request: then row r's id depends only on seed[r]
and its own row, whatever its position, the batch size and its batch-mates; an unseeded row
draws anew each call.

The exact validation of every call: the output's type, shape, dtype and device; ids in
[0, V); the sentinel at invalid rows; never a token whose logit is -inf; greedy rows equal
to the argmax. Whether a token
is kept by top-k and top-p is judged by the checks, against the float64 reference with its
ambiguity classifier (a per-call sort here would double the cost of every draw).

Read-only inputs: temperature, top_k, top_p, min_p. logits may be overwritten (engines divide by
the temperature and mask in place); a write past its ends still fails (harness/run/guard.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sampling_harness.checks.calls import token_ids
from sampling_harness.errors import KernelFailure


@dataclass(frozen=True)
class SampleLogitsBudget:
    """The effects the checks of family ``sample-logits`` must detect."""

    name: str
    fit_tv: float                   # total variation on pooled bins (curated, generated)
    fit_max_bins: int
    fit_vocab: int                  # V of the curated rows
    generated_batches: int
    generated_max_vocab: int
    boundary_tv: float              # total variation in the boundary check (few tokens)
    large_vocab: int                # V of the large-vocabulary rows (GPU only)
    large_tv: float
    tail_scales: tuple[float, ...]  # processed probability of the rare tokens over the head's
    tail_expected: float
    masked_draws: int               # draws in which a masked token could be returned
    pairs: int                      # pairs per pairing in the independence check
    power: float = 0.99


BUDGETS = {
    "smoke": SampleLogitsBudget(
        "smoke", fit_tv=0.12, fit_max_bins=16, fit_vocab=257, generated_batches=1,
        generated_max_vocab=100, boundary_tv=0.08, large_vocab=151936, large_tv=0.12,
        tail_scales=(1e-2,), tail_expected=50.0, masked_draws=2**18, pairs=2**10),
    "quick": SampleLogitsBudget(
        "quick", fit_tv=0.05, fit_max_bins=32, fit_vocab=257, generated_batches=2,
        generated_max_vocab=300, boundary_tv=0.03, large_vocab=151936, large_tv=0.05,
        tail_scales=(1e-2, 1e-4), tail_expected=100.0, masked_draws=2**22, pairs=2**12),
    "standard": SampleLogitsBudget(
        "standard", fit_tv=0.003, fit_max_bins=32, fit_vocab=1031, generated_batches=4,
        generated_max_vocab=4099, boundary_tv=0.002, large_vocab=151936, large_tv=0.01,
        tail_scales=(1e-2, 1e-4, 1e-6, 1e-8), tail_expected=200.0, masked_draws=2**32,
        pairs=2**17),
    "thorough": SampleLogitsBudget(
        "thorough", fit_tv=0.001, fit_max_bins=32, fit_vocab=1031, generated_batches=8,
        generated_max_vocab=8192, boundary_tv=0.0005, large_vocab=151936, large_tv=0.005,
        tail_scales=(1e-2, 1e-4, 1e-6, 1e-8, 1e-10), tail_expected=400.0,
        masked_draws=2**35, pairs=2**19),
}


INVALID_ROW_ID = 0


def invalid_rows(logits: torch.Tensor) -> torch.Tensor:
    """bool [B]: rows holding a NaN or +inf, or no finite entry (module doc): those whose max
    is not finite (torch's max propagates NaN), in one reduction."""
    return ~torch.isfinite(logits.amax(dim=1))


def greedy_ids(logits: torch.Tensor) -> torch.Tensor:
    """int64 [B]: the argmax of each row, the lowest index on ties (torch's argmax returns
    the first maximal index)."""
    return logits.argmax(dim=1)


def validate_ids(ids: object, inputs: dict) -> torch.Tensor:
    """Check a ``sample-logits`` kernel's output exactly; return int64 ids (rules above)."""
    logits, temperature = inputs["logits"], inputs["temperature"]
    batch, vocab = logits.shape
    ids = token_ids(ids, batch, vocab, logits.device)
    invalid = invalid_rows(logits)
    wrong = invalid & (ids != INVALID_ROW_ID)
    if bool(wrong.any()):
        row = int(wrong.nonzero()[0, 0])
        raise KernelFailure(f"returned token {int(ids[row])} at row {row}, whose logits hold a "
                            f"NaN or +inf or nothing finite: the contract's sentinel there is "
                            f"{INVALID_ROW_ID} ({int(wrong.sum())} of {int(invalid.sum())} "
                            f"invalid rows)")
    masked = (logits.gather(1, ids[:, None]).squeeze(1) == float("-inf")) & ~invalid
    if bool(masked.any()):
        row = int(masked.nonzero()[0, 0])
        raise KernelFailure(f"returned token {int(ids[row])} whose logit is -inf at row {row} "
                            f"({int(masked.sum())} of {batch} rows)")
    greedy = ((temperature == 0) & ~invalid).nonzero()[:, 0]
    if greedy.numel():
        expected = greedy_ids(logits[greedy])
        wrong = (ids[greedy] != expected).nonzero()[:, 0]
        if wrong.numel():
            row, at = int(greedy[wrong[0]]), int(wrong[0])
            raise KernelFailure(f"greedy row {row} (temperature 0) returned {int(ids[row])}, "
                                f"not the argmax {int(expected[at])} ({wrong.numel()} of "
                                f"{greedy.numel()} greedy rows wrong)")
    return ids


BENCH_FILTERS = {      # variant: (temperature, top-k, top-p, min-p, the logits' std. deviation)
    "top-k-top-p": (0.8, 50, 0.9, 0.0, 2.0), "top-p": (0.8, 0, 0.9, 0.0, 2.0),
    "plain": (0.8, 0, 1.0, 0.0, 2.0), "greedy": (0.0, 0, 1.0, 0.0, 2.0),
    "min-p": (0.8, 0, 1.0, 0.05, 2.0), "flat-top-p": (1.0, 0, 0.99, 0.0, 0.1)}


def bench_batch(shape: str, device: torch.device) -> dict:
    """``BxV[:filter]``: float32 logits N(0, 4) with, on every row, the filter ``top-k-top-p``
    (the default, the issue's setting: temperature 0.8, top-k 50, top-p 0.9), ``top-p``
    (top-p 0.9 alone), ``plain`` (temperature 0.8 alone), ``greedy`` or ``min-p`` (min-p
    0.05 at temperature 0.8; a kernel without min_p cannot run it) or ``flat-top-p`` (top-p
    0.99 alone at temperature 1 over flat logits N(0, 0.01): the kept set is nearly the
    whole row, the widest top-p search)."""
    dims, _, name = shape.lower().partition(":")
    if name not in ("", *BENCH_FILTERS):
        raise ValueError(f"{shape}: filter not one of {', '.join(BENCH_FILTERS)}")
    t, k, p, min_p, scale = BENCH_FILTERS[name or "top-k-top-p"]
    batch, vocab = (int(x) for x in dims.split("x"))
    inputs = {"logits": torch.randn(batch, vocab, device=device) * scale,
              "temperature": torch.full((batch,), t, device=device),
              "top_k": torch.full((batch,), k, dtype=torch.int64, device=device),
              "top_p": torch.full((batch,), p, device=device)}
    if min_p:
        inputs["min_p"] = torch.full((batch,), min_p, device=device)
    return inputs
