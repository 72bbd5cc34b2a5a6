"""Toy language models for the speculative-decoding engine: seeded float32 logit tables.

A model over V tokens with context C maps the last C tokens of a sequence (fewer at its
start, padded with token 0 on the left) to a row of V float32 logits: row index
sum_j t_j V^(C-1-j). The target is a seeded Gaussian table; the draft is the target plus
independent noise, so the two agree often but not always (acceptance about 0.5 to 0.8).
Everything a float64 reference needs is in the table: the law of any continuation is a
product of softmax rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True, eq=False)
class ToyModel:
    table: np.ndarray     # float32 [V^C, V]
    context: int

    @property
    def vocab(self) -> int:
        return self.table.shape[1]

    @classmethod
    def seeded(cls, vocab: int, context: int, seed: int, scale: float = 1.5) -> ToyModel:
        rng = np.random.default_rng(seed)
        return cls((rng.standard_normal((vocab**context, vocab)) * scale).astype(np.float32),
                   context)

    def drafted(self, seed: int, noise: float = 1.0) -> ToyModel:
        """A draft model: this table plus seeded Gaussian noise of the given scale."""
        rng = np.random.default_rng(seed)
        extra = rng.standard_normal(self.table.shape) * noise
        return ToyModel((self.table + extra).astype(np.float32), self.context)

    def row(self, tokens) -> int:
        """The table row of the context ending a sequence."""
        last = list(tokens)[-self.context:] if self.context else []
        last = [0] * (self.context - len(last)) + last
        index = 0
        for t in last:
            index = index * self.vocab + int(t)
        return index

    def logits(self, tokens) -> np.ndarray:
        """float32 [V]: the logits of the next token after ``tokens``."""
        return self.table[self.row(tokens)]

    def probs64(self, tokens) -> np.ndarray:
        """float64 [V]: softmax of the row, from its exact float32 values."""
        x = self.logits(tokens).astype(np.float64)
        w = np.exp(x - x.max())
        return w / w.sum()

    def tensor(self, device) -> torch.Tensor:
        return torch.as_tensor(self.table, device=device)
