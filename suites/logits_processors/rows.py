"""Curated rows of family ``logits-processors``: each makes one field bug visible.

Every builder takes V (at least 64) and a numpy generator and returns ``Row``s
(suites/logits_processors/batches.py) whose logits are Gaussian (scale 2) except where a
row sets them; distinct tokens are drawn away from ids 0 and V - 1 unless a row is about
those ids.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.suites.logits_processors.batches import Row, bits, words_for


def gaussian(vocab: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(vocab) * 2.0


def tokens(vocab: int, rng: np.random.Generator, k: int) -> list[int]:
    """k distinct tokens in [1, V - 2]."""
    return [int(t) for t in rng.choice(np.arange(1, vocab - 1), size=k, replace=False)]


def penalty_rows(vocab: int, rng: np.random.Generator) -> list[Row]:
    """Repetition, frequency and presence: signs, repeats, prompt-only tokens, padding."""
    rows = []
    a, b, c, d = tokens(vocab, rng, 4)
    x = gaussian(vocab, rng)
    x[[a, b, c, d]] = -3.0, -0.25, 2.5, 0.0
    rows.append(Row(x, [a, c], [b, d, b], 1.5, 0.5, 0.25,
                    label="negative, zero and positive logits, seen"))
    a, b, c = tokens(vocab, rng, 3)
    x = gaussian(vocab, rng)
    x[b] = -1.0
    rows.append(Row(x, [a], [b] * 300 + [c], 1.2, 0.1, 0.7,
                    label="a token repeated 300 times in the output"))
    p1, p2, p3, o1 = tokens(vocab, rng, 4)
    rows.append(Row(gaussian(vocab, rng), [p1, p2, p1, p3] * 5, [o1], 1.3, 1.0, 0.5,
                    label="prompt-only tokens under frequency and presence"))
    m1, m2, m3 = tokens(vocab, rng, 3)
    x = gaussian(vocab, rng)
    x[0], x[vocab - 1] = 1.5, -1.5
    rows.append(Row(x, [m1], [m2, m3], 2.0, 0.75, 0.5,
                    label="padding after a short history, ids 0 and V - 1 unseen"))
    x = gaussian(vocab, rng)
    x[0], x[vocab - 1] = -2.0, 3.0
    rows.append(Row(x, [0], [vocab - 1, vocab - 1, 0], 1.4, 0.6, 0.3,
                    label="ids 0 and V - 1 in the history"))
    rows.append(Row(gaussian(vocab, rng), [], [], 1.7, 0.4, 0.4, label="empty history"))
    rows.append(Row(gaussian(vocab, rng), tokens(vocab, rng, 5), [], 1.6, 0.9, 0.8,
                    label="prompt only, no output"))
    rows.append(Row(gaussian(vocab, rng), [], tokens(vocab, rng, 3) * 2, 1.25, 0.3, 0.6,
                    label="output only, no prompt"))
    rows.append(Row(gaussian(vocab, rng), tokens(vocab, rng, 3), tokens(vocab, rng, 4),
                    0.8, -0.5, -1.0, label="rewards: repetition < 1, negative penalties"))
    rows.append(Row(gaussian(vocab, rng), tokens(vocab, rng, 3), tokens(vocab, rng, 3),
                    1.0, 0.0, 0.0, label="penalties switched off (1, 0, 0)"))
    h1, h2 = tokens(vocab, rng, 2)
    x = gaussian(vocab, rng)
    x[[h1, h2]] = 3.0e4, -3.0e4
    rows.append(Row(x, [h1], [h2, h1], 3.0, 1.5, 2.0, label="large logits, seen"))
    t = tokens(vocab, rng, 1)[0]
    x = gaussian(vocab, rng)
    x[t] = 1.5
    rows.append(Row(x, [], [t, t, t], 1.0, 0.5, 0.0,
                    label="frequency cancelling the logit exactly"))
    return rows


def bias_rows(vocab: int, rng: np.random.Generator) -> list[Row]:
    """Logit bias alone and before the penalties."""
    rows = [Row(gaussian(vocab, rng), bias={0: 3.0, vocab - 1: -3.0},
                label="bias on ids 0 and V - 1")]
    t, u = tokens(vocab, rng, 2)
    x = gaussian(vocab, rng)
    x[[t, u]] = 1.0, -1.0
    rows.append(Row(x, [t], [u], 2.0, 0.5, 0.5, bias={t: -3.0, u: 4.0},
                    label="bias flipping the sign of seen logits (bias before repetition)"))
    t = tokens(vocab, rng, 1)[0]
    x = gaussian(vocab, rng)
    x[t] = 2.5
    rows.append(Row(x, bias={t: -2.5}, label="bias cancelling the logit exactly"))
    rows.append(Row(gaussian(vocab, rng), bias=dict(zip(tokens(vocab, rng, 2), (100.0, -100.0),
                                                        strict=True)),
                    label="biases of +-100"))
    many = tokens(vocab, rng, 16)
    rows.append(Row(gaussian(vocab, rng), many[:3], many[3:6], 1.3, 0.2, 0.1,
                    bias={tok: float(v) for tok, v in zip(many, rng.normal(0, 3, 16),
                                                           strict=True)},
                    label="16 biases, some on seen tokens"))
    rows.append(Row(gaussian(vocab, rng), tokens(vocab, rng, 2), [], 1.5, 0.5, 0.5,
                    label="no bias (padding only)"))
    t = tokens(vocab, rng, 1)[0]
    x = gaussian(vocab, rng)
    x[t] = 1.0e4
    rows.append(Row(x, [], [t, t], 1.1, 0.3, 0.2, bias={t: 1e-3},
                    label="a tiny bias on a large seen logit"))
    return rows


def bitmask_rows(vocab: int, rng: np.random.Generator) -> list[Row]:
    """Bitmasks with bits at the words' edges, mixed with unconstrained rows."""
    words = words_for(vocab)
    edge = 32 * (vocab // 64)
    random_words = rng.integers(-2**31, 2**31, size=words).astype(np.int32)
    return [
        Row(gaussian(vocab, rng), bitmask=bits(vocab, [0]), label="only token 0 allowed"),
        Row(gaussian(vocab, rng), label="unconstrained"),
        Row(gaussian(vocab, rng), bitmask=bits(vocab, [31]),
            label="only token 31 allowed (the sign bit)"),
        Row(gaussian(vocab, rng), bitmask=bits(vocab, [vocab - 1]),
            label="only token V - 1 allowed"),
        Row(gaussian(vocab, rng), bitmask=bits(vocab, [edge - 1, edge, 1, 30]),
            label="tokens at word edges allowed"),
        Row(gaussian(vocab, rng), label="unconstrained"),
        Row(gaussian(vocab, rng), bitmask=random_words, label="random words"),
        Row(gaussian(vocab, rng), bitmask=np.zeros(words, np.int32), label="nothing allowed"),
        Row(gaussian(vocab, rng), label="unconstrained"),
    ]


LONG_STOP_LIST = 40      # stop ids of one row: more than a kernel's one pass may hold


def stop_rows(vocab: int, rng: np.random.Generator) -> list[Row]:
    """min_tokens at its boundary: outputs of min - 1, min and min + 1 tokens; a long stop
    list (``LONG_STOP_LIST`` ids, the last ones too must be masked)."""
    stop = tokens(vocab, rng, 2)
    many = tokens(vocab, rng, min(LONG_STOP_LIST, vocab - 2))
    prompt, output = tokens(vocab, rng, 10), tokens(vocab, rng, 5)
    return [
        Row(gaussian(vocab, rng), prompt[:2], output[:3], stop=stop, min_tokens=4,
            label="output of min_tokens - 1: stop tokens masked"),
        Row(gaussian(vocab, rng), prompt[:2], output[:4], stop=stop, min_tokens=4,
            label="output of min_tokens: stop tokens allowed"),
        Row(gaussian(vocab, rng), prompt[:2], output[:5], stop=stop, min_tokens=4,
            label="output of min_tokens + 1"),
        Row(gaussian(vocab, rng), prompt[:3], [], stop=stop, min_tokens=0,
            label="min_tokens 0"),
        Row(gaussian(vocab, rng), prompt[:3], [], stop=[0, vocab - 1], min_tokens=1,
            label="stop ids 0 and V - 1, no output yet"),
        Row(gaussian(vocab, rng), prompt, output[:2], stop=stop, min_tokens=4,
            label="long prompt, short output (the output counts alone)"),
        Row(gaussian(vocab, rng), [], output[:4], stop=stop, min_tokens=4,
            label="no prompt, output of min_tokens"),
        Row(gaussian(vocab, rng), prompt[:2], output[:1], stop=[], min_tokens=10,
            label="no stop tokens (padding only)"),
        Row(gaussian(vocab, rng), prompt[:2], [stop[0], output[0]], stop=stop + [stop[0]],
            min_tokens=3, label="a stop token in the history, listed twice"),
        Row(gaussian(vocab, rng), prompt[:2], output[:1], stop=many, min_tokens=4,
            label=f"{len(many)} stop tokens, all masked"),
    ]


def interaction_rows(vocab: int, rng: np.random.Generator) -> list[Row]:
    """Rows where the processors meet: a bias on a masked token, a biased stop token under
    min_tokens, a seen token the grammar forbids, everything on one constrained row."""
    a, b, c, d, e = tokens(vocab, rng, 5)
    allowed = [t for t in range(vocab) if t not in (a, c)]
    return [
        Row(gaussian(vocab, rng), [a], [b], 1.5, 0.5, 0.5, bias={a: 5.0, b: -1.0},
            bitmask=bits(vocab, allowed), label="a bias on a token the grammar forbids"),
        Row(gaussian(vocab, rng), [d], [e], 1.2, 0.3, 0.3, bias={c: 2.0, e: 1.0},
            stop=[c, e], min_tokens=3, label="a biased stop token under min_tokens"),
        Row(gaussian(vocab, rng), [c], [c, a, a], 1.8, 0.4, 0.2,
            bitmask=bits(vocab, allowed), label="seen tokens the grammar forbids"),
        Row(gaussian(vocab, rng), [a, b], [c, d, d, e], 1.3, 0.6, 0.9,
            bias={d: -2.0, 0: 1.0}, bitmask=rng.integers(-2**31, 2**31, size=words_for(
                vocab)).astype(np.int32), stop=[e, vocab - 1], min_tokens=9,
            label="every processor on one constrained row"),
    ]
