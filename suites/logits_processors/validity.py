"""Validity of family ``logits-processors``: exact, no alpha.

Every call is validated by the runner (suites/logits_processors/contract.py: float32
[B, V] on the logits' device, never NaN or +inf) and its inputs other than the logits are
compared bit for bit with the harness's copy (read-only). This check adds edge batches,
each called twice under two allocator poisons (the same output is due: an unwritten value
differs) and compared with the reference: V = 1; an empty batch; histories of width 0;
bias, stop and bitmask tables of width 0 (a bitmask of no words allows nothing); no
processor at all; a history of padding only; -inf logits seen, biased and penalised.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.suites.logits_processors.batches import (
    PROCESSORS,
    Batch,
    Row,
    assemble,
    words_for,
)
from sampling_harness.suites.logits_processors.compare import call, summarise
from sampling_harness.verdict import Outcome


def _every_processor(rows: list[Row], dtype=torch.float32, **widths) -> Batch:
    return assemble(rows, dtype, PROCESSORS, **widths)


def _narrowed(batch: Batch, **widths) -> Batch:
    """The batch with some tables cut to width 0 (``name=0`` for each input named)."""
    inputs = dict(batch.inputs)
    for name in widths:
        inputs[name] = inputs[name][:, :0]
    return Batch(inputs, batch.labels)


def edge_batches(seed: int) -> dict[str, Batch]:
    rng = np.random.default_rng(seed)
    gaussian = [rng.standard_normal(33) * 2 for _ in range(3)]
    one = _every_processor([Row(np.array([0.5]), [0], [], 1.5, 0.5, 0.5, bias={0: 1.0},
                                bitmask=np.array([1], np.int32), stop=[0], min_tokens=2,
                                label="V = 1")], history=2)
    rows = [Row(x, [], [], 1.5, 0.5, 0.5, bias={3: 1.0}, bitmask=None, stop=[4],
                min_tokens=1, label="no history") for x in gaussian]
    empty = _every_processor(rows, torch.bfloat16)
    padding = [Row(x, [], [], 2.0, 0.7, 0.6, label="a history of padding only")
               for x in gaussian]
    masked = np.array(gaussian[0])
    masked[[0, 5, 32]] = -np.inf
    infinite = Row(masked, [5], [0, 0, 32], 1.5, 0.5, 0.5, bias={5: 2.0, 32: -1.0},
                   stop=[32], min_tokens=1, label="-inf logits seen and biased")
    batches = {
        "V = 1": one,
        "empty batch": Batch({name: value[:0] if isinstance(value, torch.Tensor) else value
                              for name, value in one.inputs.items()}, []),
        "histories of width 0": _narrowed(empty, token_ids=0),
        "bias, stop and bitmask tables of width 0": _narrowed(
            _every_processor(rows, torch.float16), logit_bias_ids=0, logit_bias_values=0,
            stop_token_ids=0, allowed_bitmask=0),
        "no processor": assemble(rows, torch.float32, ()),
        "a history of padding only": assemble(padding, torch.float16, PROCESSORS,
                                              history=8, words=words_for(33)),
        "-inf logits": _every_processor([infinite]),
    }
    return batches


def validity(ctx) -> Outcome:
    records = [call(ctx, name, batch, twice=True)
               for name, batch in edge_batches(ctx.seed).items()]
    outcome = summarise(records, "edge batches, each twice under two allocator poisons")
    if outcome.passed:
        outcome.message = (f"{ctx.runner.calls} calls valid (float32 [B, V], no NaN or +inf, "
                           f"read-only inputs unchanged); " + outcome.message)
    return outcome
