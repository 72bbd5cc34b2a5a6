"""Hypothesis strategies for family ``logits-processors``: whole batches, drawn as a few
knobs and a seed, built by numpy (suites/logits_processors/batches.py).

A batch draws its vocabulary just off a power of two (2^k - 1, 2^k + 1, 2^k + 3), its
dtype (float32, bfloat16, float16), which processors are passed (each with probability
3/4), its history width (0 one time in 8, else anything up to or at the maximum) and its
table widths (a bitmask covering V, narrower or wider). Each row then draws from the seed:
logits of any scale with -inf entries and exact ties, a history whose tokens repeat (a
small pool with ids 0 and V - 1 in it) or not, its prompt length, penalties neutral (one
time in 4) or anywhere in their ranges, distinct biased tokens, a bitmask (unconstrained,
nothing allowed, a single bit, random words of any density), stop tokens and min_tokens
at, around or far from the output's length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from sampling_harness.strategies.probs import row_seeds
from sampling_harness.suites.logits_processors.batches import (
    DTYPES,
    PROCESSORS,
    Row,
    assemble,
    bits,
    words_for,
)

MAX_ROWS = 8


def vocab_sizes(max_vocab: int) -> st.SearchStrategy[int]:
    """V just off a power of two: 2^k - 1, 2^k + 1, 2^k + 3, up to ``max_vocab``."""
    sizes = sorted({v for k in range(1, 19) for v in (2**k - 1, 2**k + 1, 2**k + 3)
                    if 2 <= v <= max_vocab})
    return st.sampled_from(sizes)


def history_widths(max_history: int) -> st.SearchStrategy[int]:
    """0 (no history) one time in 8, else the maximum or anything up to it."""
    return st.integers(0, 7).flatmap(lambda k: st.just(0) if k == 0 else st.one_of(
        st.just(max_history), st.integers(1, max_history)))


@dataclass(frozen=True)
class Knobs:
    """What a batch's rows look like (each row draws its own values from them)."""

    scale: float          # spread of the logits
    masked: float         # share of -inf logits
    grid: float           # 0, or the step logits are rounded to (exact ties)
    repeat: float         # share of history tokens drawn from a small pool
    biased: int           # biased tokens a row at most
    stops: int            # stop tokens a row at most


@st.composite
def knobs(draw) -> Knobs:
    return Knobs(scale=draw(st.floats(-2.0, 4.0).map(lambda e: 10.0 ** e)),
                 masked=draw(st.one_of(st.just(0.0), st.floats(0.0, 0.5))),
                 grid=draw(st.sampled_from((0.0, 0.25, 1.0))),
                 repeat=draw(st.floats(0.0, 1.0)),
                 biased=draw(st.integers(0, 16)), stops=draw(st.integers(0, 4)))


def _logits(vocab: int, k: Knobs, rng: np.random.Generator) -> np.ndarray:
    row = rng.standard_normal(vocab) * min(k.scale, 6e4 / 5)
    if k.grid:
        row = np.round(row / k.grid) * k.grid
    row[rng.random(vocab) < k.masked] = -np.inf
    return row


def _history(vocab: int, width: int, k: Knobs, rng: np.random.Generator,
             full: bool) -> list[int]:
    length = width if full else int(rng.integers(0, width + 1))
    pool = np.unique(np.concatenate([[0, vocab - 1], rng.integers(0, vocab, size=6)]))
    pooled = rng.random(length) < k.repeat
    return np.where(pooled, rng.choice(pool, size=length),
                    rng.integers(0, vocab, size=length)).tolist()


def _bitmask(vocab: int, rng: np.random.Generator) -> np.ndarray | None:
    kind = rng.integers(0, 4)
    if kind == 0:
        return None
    if kind == 1:
        return np.zeros(words_for(vocab), np.int32)
    if kind == 2:
        return bits(vocab, [int(rng.integers(0, vocab))])
    words = rng.integers(-2**31, 2**31, size=words_for(vocab))
    for _ in range(int(rng.integers(0, 3))):       # sparser: a quarter, an eighth
        words &= rng.integers(-2**31, 2**31, size=words.size)
    return words.astype(np.int32)


def _neutral_or(neutral: float, value: float, rng: np.random.Generator) -> float:
    """A penalty: switched off one time in 4, else ``value``."""
    return float(neutral if rng.random() < 0.25 else value)


def random_row(vocab: int, width: int, k: Knobs, rng: np.random.Generator,
               full: bool = False) -> Row:
    """One row of a batch of V = ``vocab`` and histories of ``width`` slots (``full``: a
    history of ``width`` tokens, else of any length up to it)."""
    history = _history(vocab, width, k, rng, full)
    prompt = int(rng.integers(0, len(history) + 1))
    output = len(history) - prompt
    biased = rng.choice(vocab, size=min(vocab, int(rng.integers(0, k.biased + 1))),
                        replace=False)
    values = np.where(rng.random(biased.size) < 0.1, rng.choice([-100.0, 100.0], biased.size),
                      rng.uniform(-5, 5, biased.size))
    least = [output, output + 1, max(output - 1, 0), 0, int(rng.integers(0, 2 * width + 2))]
    return Row(_logits(vocab, k, rng), history[:prompt], history[prompt:],
               repetition=_neutral_or(1.0, rng.uniform(0.5, 3.0), rng),
               frequency=_neutral_or(0.0, rng.uniform(-2.0, 2.0), rng),
               presence=_neutral_or(0.0, rng.uniform(-2.0, 2.0), rng),
               bias=dict(zip(biased.tolist(), values.tolist(), strict=True)),
               bitmask=_bitmask(vocab, rng),
               stop=rng.integers(0, vocab, size=int(rng.integers(0, k.stops + 1))).tolist(),
               min_tokens=least[int(rng.integers(0, len(least)))],
               label=f"history {len(history)}, prompt {prompt}")


@st.composite
def processor_batches(draw, max_vocab: int, max_history: int, max_rows: int = MAX_ROWS):
    """A ``Batch`` (suites/logits_processors/batches.py) of every processor subset."""
    vocab = draw(vocab_sizes(max_vocab))
    dtype = draw(st.sampled_from(DTYPES))
    processors = {p for p in PROCESSORS if draw(st.integers(0, 3)) > 0}    # each 3 in 4
    width = draw(history_widths(max_history))
    rows = draw(st.integers(1, max_rows))
    words = max(0, words_for(vocab) + draw(st.sampled_from((0, 0, -1, -3, 2))))
    k, rng = draw(knobs()), draw(row_seeds())
    return assemble([random_row(vocab, width, k, rng) for _ in range(rows)], dtype,
                    processors, words=words, history=width)
