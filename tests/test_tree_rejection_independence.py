"""Family ``tree-rejection``, check ``independence`` (issue 50): a valid output of probability
0 under the law fails the check exactly, with the sequence named; it never errs.

The kernel here rejects every child at the root and returns the first token of positive
target probability that no root child holds. Every such row passes validation, yet with
drawn children the law never ends the root on a lone 0 or 1 (after rejected drafts the
residual is token 2 alone), so the pair tests' support mapping met cells outside it and
``np.bincount`` raised: a harness error, exit 2, where the kernel is wrong. The check is
called here as the runner calls it (every output validated first); the same failure through
the command line, verdict ``fail`` and exit 1, is tests/test_random_outputs.py's
tree-rejection case (its random walk ends the root on such tokens too).
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from sampling_harness.families import FAMILIES
from sampling_harness.seeds import seed_stream
from sampling_harness.suites.tree_rejection.contract import BUDGETS
from sampling_harness.suites.tree_rejection.independence import independence

FAMILY = FAMILIES["tree-rejection"]


def root_rejecter(draft_token_ids, parent_ids, draft_probs, target_probs, greedy, seed):
    """Every child of the root rejected; the first token of positive target probability that
    no root child holds is returned alone. Valid only on trees of depth 1 (the width D + 1 is
    taken as 2) whose root keeps such a token: the independence check's star."""
    root = target_probs[:, 0]
    at_root = ((parent_ids < 0) & (draft_token_ids >= 0)).long()
    is_child = torch.zeros_like(root, dtype=torch.long).scatter_reduce(
        1, draft_token_ids.clamp(min=0), at_root, reduce="amax")
    free = (root > 0) & (is_child == 0)
    out = torch.full((root.shape[0], 2), -1, dtype=torch.int64, device=root.device)
    out[:, 0] = free.to(torch.int8).argmax(1)
    return out


def context(kernel, seed: int = 20261122) -> SimpleNamespace:
    """The little of a ``CheckContext`` the check reads: calls validated as the runner's."""
    def call(inputs, call_seed):
        return FAMILY.validate(FAMILY.call(kernel, inputs, call_seed), inputs)

    return SimpleNamespace(budget=BUDGETS["smoke"], seed=seed, alpha=1e-4,
                           device=torch.device("cpu"), seeds=lambda: seed_stream(seed),
                           runner=SimpleNamespace(call=call))


def test_a_sequence_of_probability_zero_fails_independence_exactly():
    outcome = independence(context(root_rejecter))
    assert not outcome.passed and outcome.p_value == 0.0
    assert "drawn children" in outcome.message and "probability 0 under the law" in outcome.message
    assert outcome.details["sequence"] in ([0], [1]) and outcome.details["impossible"] > 0

