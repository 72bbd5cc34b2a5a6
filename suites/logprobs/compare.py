"""A kernel's logprob values and ranks against the float64 reference, with derived tolerances.

For each requested token the reference (reference/logprobs.py) gives a range of values and
of ranks that holds under every float32 resolution of the ambiguous top-k / top-p decisions
(``mode_bounds``), and this module widens the value range by the float32 arithmetic error:

* raw_logits: none: the values are the inputs, upcast exactly;
* processed_logits: r u |z| (r roundings of the division by the temperature, u = 2^-24);
* raw_logprobs / processed_logprobs: ``logprob_tolerance``, the first-order error bound of a
  float32 log-softmax given the conditioning d lp_i = dx_i - sum_j p_j dx_j (its docstring).

Values are compared exactly at -inf (padding, masked tokens). TME, the mean over non-padded
tokens of exp(|lp - lp_ref|), is reported for every logprob comparison and held to the mean
of exp(tolerance) over the same tokens: the bound the error analysis gives (over rows whose
top-k / top-p decisions are all unambiguous: elsewhere the reference's own resolution is
only one of the admissible ones).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

from sampling_harness.reference.logprobs import logprob_tolerance, mode_bounds, mode_values, tme
from sampling_harness.reference.processed import U32, process
from sampling_harness.report.plots import errors_plot


def tolerances(batch: dict, mode: str) -> np.ndarray:
    """float64 [B, K] absolute tolerance of each requested value (0 at padding)."""
    ids = batch["token_ids"].cpu().numpy()
    x = batch["logits"].detach().to("cpu", torch.float64).numpy()
    pad = ids < 0
    safe = np.where(pad, 0, ids)
    if mode == "raw_logits":
        return np.zeros(ids.shape)
    if mode == "raw_logprobs":
        row_tol = logprob_tolerance(torch.float32, x)
    else:
        proc = process(x, batch["temperature"], batch["top_k"], batch["top_p"])
        if mode == "processed_logits":
            scaled = np.take_along_axis(proc.scaled, safe, axis=1)
            finite = np.isfinite(scaled) & ~pad
            return np.where(finite, proc.roundings[:, None] * U32 * np.abs(
                np.where(finite, scaled, 0.0)), 0.0)
        row_tol = logprob_tolerance(torch.float32, proc.values, roundings=proc.roundings)
    return np.where(pad, 0.0, np.take_along_axis(row_tol, safe, axis=1))


def _row_ambiguous(batch: dict, mode: str) -> np.ndarray:
    """bool [B]: rows with an ambiguous top-k / top-p decision anywhere (every logprob of such
    a row moves with the decision, so TME against the reference is taken over other rows)."""
    if mode.startswith("raw"):
        return np.zeros(batch["token_ids"].shape[0], bool)
    proc = process(batch["logits"], batch["temperature"], batch["top_k"], batch["top_p"])
    return proc.ambiguous.any(axis=1)


@dataclass(frozen=True)
class Expected:
    """The reference side of a (batch, mode) comparison: the value and rank ranges, the
    reference values, the ambiguous decisions, the tolerances, the ambiguous rows."""

    bounds: object
    reference: np.ndarray
    ambiguous: np.ndarray
    tol: np.ndarray
    row_ambiguous: np.ndarray


EXPECTED_HELD = 64
_EXPECTED: OrderedDict = OrderedDict()   # (mode, fingerprint of the batch) -> Expected


def fingerprint(batch: dict) -> str:
    """A digest of the batch's tensors (dtype, shape, bytes): equal batches, equal digests."""
    digest = hashlib.blake2b(digest_size=16)
    for name in sorted(batch):
        tensor = batch[name].detach().cpu().contiguous()
        digest.update(f"{name}{tensor.dtype}{tuple(tensor.shape)}".encode())
        digest.update(tensor.view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return digest.hexdigest()


def expected(batch: dict, mode: str) -> Expected:
    """The float64 reference of (batch, mode), computed once and held for the latest
    EXPECTED_HELD pairs: the checks of one run compare every kernel on the same curated
    batches, and the reference costs far more than a kernel call."""
    key = (mode, fingerprint(batch))
    if key in _EXPECTED:
        _EXPECTED.move_to_end(key)
        return _EXPECTED[key]
    args = (batch["logits"], mode, batch["temperature"], batch["top_k"], batch["top_p"],
            batch["token_ids"])
    reference, _, ambiguous = mode_values(*args)
    _EXPECTED[key] = Expected(mode_bounds(*args), reference, ambiguous,
                              tolerances(batch, mode), _row_ambiguous(batch, mode))
    while len(_EXPECTED) > EXPECTED_HELD:
        _EXPECTED.popitem(last=False)
    return _EXPECTED[key]


def compare(batch: dict, mode: str, values: torch.Tensor, ranks: torch.Tensor | None) -> dict:
    """Everything one (batch, mode) comparison found; ``failures`` lists what broke."""
    want = expected(batch, mode)
    bounds, reference, ambiguous, tol = want.bounds, want.reference, want.ambiguous, want.tol
    got = values.detach().to("cpu", torch.float64).numpy()
    pad = batch["token_ids"].cpu().numpy() < 0
    with np.errstate(invalid="ignore"):
        exact_inf = (bounds.high == -np.inf) & (got != -np.inf)
        below = got < bounds.low - tol
        above = got > bounds.high + tol
    wrong = (exact_inf | below | above) & ~pad
    failures = []
    if wrong.any():
        row, slot = (int(i) for i in np.argwhere(wrong)[0])
        failures.append(
            f"{mode}: row {row}, token {int(batch['token_ids'][row, slot])}: value "
            f"{float(got[row, slot])!r}, expected {float(reference[row, slot])!r} within "
            f"[{float(bounds.low[row, slot] - tol[row, slot])!r}, "
            f"{float(bounds.high[row, slot] + tol[row, slot])!r}] "
            f"({int(wrong.sum())} values wrong)")
    rank_wrong = np.zeros(pad.shape, bool)
    if ranks is not None:
        r = ranks.cpu().numpy()
        rank_wrong = ~pad & ((r < bounds.rank_low) | (r > bounds.rank_high))
        if rank_wrong.any():
            row, slot = (int(i) for i in np.argwhere(rank_wrong)[0])
            failures.append(
                f"{mode}: row {row}, token {int(batch['token_ids'][row, slot])}: rank "
                f"{int(r[row, slot])}, expected {int(bounds.rank_low[row, slot])}"
                + (f"..{int(bounds.rank_high[row, slot])}"
                   if bounds.rank_high[row, slot] != bounds.rank_low[row, slot] else "")
                + f" ({int(rank_wrong.sum())} ranks wrong)")
    sure = ~pad & ~want.row_ambiguous[:, None]
    record = {"mode": mode, "tokens": int((~pad).sum()), "ambiguous": int(ambiguous.sum()),
              "values_wrong": int(wrong.sum()), "ranks_wrong": int(rank_wrong.sum()),
              "ranks_checked": ranks is not None, "failures": failures,
              "max_tolerance": float(tol[~pad].max()) if (~pad).any() else 0.0}
    if mode.endswith("logprobs") and sure.any():
        record["tme"] = tme(np.where(sure, got, 0.0), np.where(sure, reference, 0.0))
        record["tme_bound"] = float(np.mean(np.exp(tol[sure])))
    if sure.any():
        with np.errstate(invalid="ignore"):
            error = np.where(got == reference, 0.0, np.abs(got - reference))
        record["plot"] = errors_plot(mode, error[sure], tol[sure], record.get("tme"),
                                     record.get("tme_bound"))
    return record
