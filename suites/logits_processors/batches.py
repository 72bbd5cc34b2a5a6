"""Batches of family ``logits-processors``, built from rows.

A ``Row`` is one request: its float64 logits (cast to the batch's dtype when assembled),
its prompt and output token ids, its penalties, its biases, its bitmask (None:
unconstrained, every word -1), its stop tokens and min_tokens, and a label for messages.
``assemble`` pads rows into the contract's tensors on the CPU, passing only the processors
named (the others None), with the widths given (a bitmask of W words, narrower or wider
than the logits; at least L history slots, NB bias slots, S stop slots).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from sampling_harness.suites.logits_processors.contract import OPTIONS

DTYPES = (torch.float32, torch.bfloat16, torch.float16)
PROCESSORS = ("repetition", "frequency", "presence", "bias", "bitmask", "stop")
PENALTIES = frozenset({"repetition", "frequency", "presence"})


@dataclass
class Row:
    logits: np.ndarray                   # float64 [V]
    prompt: list = field(default_factory=list)
    output: list = field(default_factory=list)
    repetition: float = 1.0
    frequency: float = 0.0
    presence: float = 0.0
    bias: dict = field(default_factory=dict)        # token -> bias
    bitmask: np.ndarray | None = None    # int32 words; None: unconstrained (all -1)
    stop: list = field(default_factory=list)
    min_tokens: int = 0
    label: str = ""


@dataclass
class Batch:
    """The contract's inputs (on the CPU) and a label per row."""

    inputs: dict
    labels: list

    @property
    def dtype(self) -> str:
        return str(self.inputs["logits"].dtype).removeprefix("torch.")


def words_for(vocab: int) -> int:
    """The bitmask width that covers V tokens: ceil(V / 32) words."""
    return -(-vocab // 32)


def bits(vocab: int, allowed) -> np.ndarray:
    """int32 [ceil(V / 32)] words allowing exactly the tokens ``allowed``."""
    words = np.zeros(words_for(vocab), dtype=np.uint32)
    for token in allowed:
        words[token // 32] |= np.uint32(1) << np.uint32(token % 32)
    return words.view(np.int32)


def _padded(rows: list, width: int, fill, dtype) -> np.ndarray:
    table = np.full((len(rows), width), fill, dtype=dtype)
    for i, values in enumerate(rows):
        table[i, :len(values)] = values
    return table


def _bitmask(rows: list[Row], words: int) -> np.ndarray:
    """int32 [B, W]: each row's words cut or padded to W (padding words allow nothing for a
    constrained row, everything for an unconstrained one)."""
    table = np.full((len(rows), words), -1, dtype=np.int32)
    for i, row in enumerate(rows):
        if row.bitmask is not None:
            own = np.asarray(row.bitmask, dtype=np.int32)[:words]
            table[i] = 0
            table[i, :own.size] = own
    return table


def assemble(rows: list[Row], dtype: torch.dtype, processors, words: int | None = None,
             history: int = 0, bias_slots: int = 0, stop_slots: int = 0) -> Batch:
    """The contract's inputs for ``rows`` in ``dtype``, with ``processors`` (names in
    PROCESSORS) passed and the others None; ``words``: the bitmask width (default: ceil(V /
    32)); the other widths at least the rows' own."""
    on = set(processors)
    vocab = rows[0].logits.size
    logits = torch.as_tensor(np.stack([r.logits for r in rows])).to(dtype)
    histories = [list(r.prompt) + list(r.output) for r in rows]
    width = max([history] + [len(h) for h in histories])
    inputs = dict.fromkeys(OPTIONS)
    inputs.update(logits=logits,
                  token_ids=torch.as_tensor(_padded(histories, width, -1, np.int64)),
                  num_prompt_tokens=torch.tensor([len(r.prompt) for r in rows],
                                                 dtype=torch.int64))
    for name, key in (("repetition", "repetition_penalty"), ("frequency", "frequency_penalty"),
                      ("presence", "presence_penalty")):
        if name in on:
            inputs[key] = torch.tensor([getattr(r, name) for r in rows], dtype=torch.float32)
    if "bias" in on:
        slots = max([bias_slots] + [len(r.bias) for r in rows])
        inputs["logit_bias_ids"] = torch.as_tensor(
            _padded([list(r.bias) for r in rows], slots, -1, np.int64))
        inputs["logit_bias_values"] = torch.as_tensor(
            _padded([list(r.bias.values()) for r in rows], slots, 0.0, np.float32))
    if "bitmask" in on:
        inputs["allowed_bitmask"] = torch.as_tensor(
            _bitmask(rows, words_for(vocab) if words is None else words))
    if "stop" in on:
        slots = max([stop_slots] + [len(r.stop) for r in rows])
        inputs["stop_token_ids"] = torch.as_tensor(_padded([r.stop for r in rows], slots, -1,
                                                           np.int64))
        inputs["min_tokens"] = torch.tensor([r.min_tokens for r in rows], dtype=torch.int64)
    return Batch(inputs, [r.label for r in rows])


def on_device(inputs: dict, device: torch.device) -> dict:
    """The inputs with every tensor moved to ``device``."""
    return {name: value.to(device) if isinstance(value, torch.Tensor) else value
            for name, value in inputs.items()}


def rows_of(batch: Batch, keep: list[int]) -> Batch:
    """The rows ``keep`` of a batch, in that order, with its widths."""
    index = torch.tensor(keep, dtype=torch.int64)
    inputs = {name: value.index_select(0, index) if isinstance(value, torch.Tensor) else value
              for name, value in batch.inputs.items()}
    return Batch(inputs, [batch.labels[i] for i in keep])


def concatenated(first: Batch, second: Batch) -> Batch:
    """The rows of two batches of the same widths and processors, one after the other."""
    inputs = {name: torch.cat([value, second.inputs[name]]) if isinstance(value, torch.Tensor)
              else value for name, value in first.inputs.items()}
    return Batch(inputs, first.labels + second.labels)
