"""What the engine's runs are checked by: TME, the acceptance-rate test, continuation laws.

* TME = mean over generated tokens of exp(|lp - lp_ref|), lp_ref the float64 log-softmax of
  the target's exact float32 row over the final sequence (teacher-forced: the row of the
  context before each token, whatever position it sits at). Its bound: the mean of
  exp(tol_i), tol_i = ``logprob_tolerance`` of a float32 log-softmax of that row.
* Acceptance: with alpha_i = sum_x min(p, q) the acceptance probability of verified draft i
  given the past (predictable: fixed before its draft and uniform are drawn), M_n =
  sum (X_i - alpha_i) is a martingale with increments in [-1, 1] and predictable variance
  W = sum alpha_i (1 - alpha_i). Freedman's inequality: P(|M| >= t, W <= s) <=
  2 exp(-t^2 / (2 (s + t/3))). The realized W is put on a dyadic grid s_j = 2^j, j < 40,
  and the test is Bonferroni over the grid: exact level, no normal approximation.
* The law of a continuation of ``length`` tokens after a prompt under the target alone:
  a product of float64 softmax rows, over all V^length outcomes.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch
from scipy import optimize

from sampling_harness.reference.logprobs import logprob_tolerance, logprobs
from sampling_harness.suites.spec_decode.engine.toy import ToyModel

LEVELS = 40


def teacher_forced(target: ToyModel, prompt: list[int], output: list[int]):
    """(float64 reference logprobs, float32 tolerances) of each output token."""
    refs, tols = [], []
    for j, token in enumerate(output):
        row = target.logits(prompt + output[:j]).astype(np.float64)[None, :]
        refs.append(float(logprobs(row)[0, token]))
        tols.append(float(logprob_tolerance(torch.float32, row)[0, token]))
    return refs, tols


def tme_and_bound(target: ToyModel, requests) -> tuple[float, float, int]:
    """(TME, its float32 bound, tokens) over every generated token of ``requests``."""
    errors, tols = [], []
    for req in requests:
        refs, tol = teacher_forced(target, req.prompt, req.output)
        with np.errstate(over="ignore", invalid="ignore"):
            errors += [abs(a - b) for a, b in zip(req.logprobs, refs, strict=True)]
        tols += tol
    if not errors:
        return 1.0, 1.0, 0
    with np.errstate(over="ignore"):
        err = np.where(np.isnan(errors), np.inf, errors)
        return float(np.mean(np.exp(err))), float(np.mean(np.exp(tols))), len(errors)


def freedman_threshold(variance: float, alpha: float) -> float:
    """t with 2 exp(-t^2 / (2 (s + t/3))) = alpha at s = ``variance``."""
    log_term = math.log(2.0 / alpha)
    return log_term / 3.0 + math.sqrt((log_term / 3.0) ** 2 + 2.0 * variance * log_term)


def acceptance_test(accepted, alphas, alpha: float, power: float) -> dict:
    """The two-sided test of the measured acceptance count against sum alpha_i."""
    x, a = np.asarray(accepted, float), np.asarray(alphas, float)
    n = x.size
    if n == 0:
        return {"drafts": 0, "p_value": 1.0, "measured": float("nan"),
                "expected": float("nan"), "min_detectable_shift": 1.0}
    deviation = float(x.sum() - a.sum())
    variance = float((a * (1 - a)).sum())
    level = max(0, math.ceil(math.log2(max(variance, 1.0))))
    s = 2.0**level
    t = abs(deviation)
    p = min(1.0, LEVELS * 2.0 * math.exp(-t * t / (2.0 * (s + t / 3.0))))
    threshold = freedman_threshold(s, alpha / LEVELS)
    z = float(optimize.brentq(lambda q: 0.5 * math.erfc(q / math.sqrt(2)) - (1 - power),
                              0.0, 10.0))
    return {"drafts": n, "measured": float(x.mean()), "expected": float(a.mean()),
            "deviation": deviation, "variance": variance, "threshold": threshold,
            "p_value": p, "min_detectable_shift": (threshold + z * math.sqrt(variance)) / n}


def continuation_law(target: ToyModel, prompt: list[int], length: int) -> np.ndarray:
    """float64 [V^length]: P(continuation), outcome index sum_j t_j V^(length-1-j)."""
    vocab = target.vocab
    law = np.empty(vocab**length)
    for index, tokens in enumerate(itertools.product(range(vocab), repeat=length)):
        prob, seq = 1.0, list(prompt)
        for t in tokens:
            prob *= target.probs64(seq)[t]
            seq.append(t)
        law[index] = prob
    return law


def outcome_index(output: list[int], vocab: int) -> int:
    index = 0
    for t in output:
        index = index * vocab + t
    return index
