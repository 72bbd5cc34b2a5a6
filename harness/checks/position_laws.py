"""(target, draft) laws of one draft position, by name: the pairs where rejection samplers
break, shared by the curated batches of ``rejection`` and ``tree-rejection``.

``tilted_pair``: q peaked at random (weights u^3 + 1e-3, u uniform), p = q tilted by
exp(tilt N(0, 1)) and renormalised. The named kinds (``position_laws``): ``typical`` (tilt 1,
acceptance about one half), ``weak-draft`` (p and q independent, u^4 each), ``equal``
(p = q), ``near-equal`` (q = p (1 + 1e-3 N(0, 1)), renormalised), ``q-mass-where-p-has-none``
(p zero on about half the tokens, never its argmax, where q keeps mass), ``peaked-target``
(p puts 0.9 on one token, never token 0; q uniform). Rows are float32 normalised in float64.
"""

from __future__ import annotations

import numpy as np

from sampling_harness.strategies.probs import normalised


def tilted_pair(vocab: int, rng: np.random.Generator, tilt: float) -> tuple[np.ndarray, ...]:
    """(p, q): q peaked at random (u^3), p = q tilted by exp(tilt N(0, 1)). tilt 0: p = q;
    tilt ~1: acceptance about one half; larger: the draft is a poor guess."""
    weights = rng.random(vocab) ** 3 + 1e-3
    q = normalised(weights)
    p = normalised(weights * np.exp(tilt * rng.standard_normal(vocab)))
    return p, q


def position_laws(kind: str, vocab: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(p, q) of one draft position, by name."""
    if kind == "typical":
        return tilted_pair(vocab, rng, 1.0)
    if kind == "weak-draft":
        return normalised(rng.random(vocab) ** 4), normalised(rng.random(vocab) ** 4)
    if kind == "equal":
        p, _ = tilted_pair(vocab, rng, 1.0)
        return p, p.copy()
    if kind == "near-equal":
        p, _ = tilted_pair(vocab, rng, 1.0)
        return p, normalised(p * (1 + 1e-3 * rng.standard_normal(vocab)))
    if kind == "q-mass-where-p-has-none":
        p, q = tilted_pair(vocab, rng, 0.5)
        zero = rng.random(vocab) < 0.5
        zero[int(np.argmax(p))] = False
        return normalised(np.where(zero, 0.0, p)), q
    if kind == "peaked-target":
        p = np.full(vocab, 0.1 / (vocab - 1))
        p[rng.integers(1, vocab)] = 0.9
        return normalised(p), normalised(np.ones(vocab))
    raise ValueError(f"unknown position law {kind!r}")
