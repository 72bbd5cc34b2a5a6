"""Wrong tree verifiers, one field bug each (declared with their bugs and catching checks in
suites/tree_rejection/__init__.py).

Each is torch-tree-rejection (kernels/tree_rejection/torch_tree_rejection.py) with one
piece swapped, so that everything but the bug is the clean verifier. All take the
contract's arguments in order: (draft_token_ids, parent_ids, draft_probs, target_probs,
greedy, seed).
"""

from __future__ import annotations

import torch

from sampling_harness.kernels.sample.torch_race import seeded_generator
from sampling_harness.kernels.tree_rejection.torch_tree_rejection import (
    NODE_COIN,
    Draws,
    Pieces,
    counter_draws,
    race,
    residual,
    tree_verify,
)

FLOAT32_BITS = 24
THRESHOLD_SINGLE, THRESHOLD_ACC = 0.8, 0.8


def _float32_coins(seed, batch, nodes, vocab, device) -> Draws:
    """The coins on float32's grid of [0, 1): k 2^-24, exactly 0 with probability 2^-24
    (what ``torch.rand`` in float32 draws)."""
    draws = counter_draws(seed, batch, nodes, vocab, device)
    grid = 2.0 ** FLOAT32_BITS
    return Draws(lambda index: torch.floor(draws.coin(index) * grid) / grid, draws.noise)


def _inclusive_listed(u, before, after, p_x):
    return u <= after


def _inclusive_drawn(u, p_x, q_x, spent, norm):
    return u * q_x * norm <= (p_x - spent * q_x).clamp_min(0.0)


def coin_fp32_inclusive(tokens, parents, draft_probs, target_probs, greedy, seed):
    """A float32 coin compared with ``<=``: a child of target probability 0 is accepted
    whenever the coin is exactly 0 (probability 2^-24 per coin)."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(draws=_float32_coins, accept_listed=_inclusive_listed,
                              accept_drawn=_inclusive_drawn))


def _argmax_everywhere(x, best, sampled, greedy):
    return x == best


def _every_argmax(target_probs, greedy):
    return target_probs.argmax(dim=2)


def _target_row(target_rows, draft_rows, spent, children):
    return target_rows.to(torch.float64)


def argmax_verify_sampled(tokens, parents, draft_probs, target_probs, greedy, seed):
    """Every request verified by the argmax (a child accepted iff it is its node's argmax),
    the last token of a random request then sampled from the target row: greedy
    verification and stochastic sampling mixed."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(argmax=_every_argmax, verify=_argmax_everywhere,
                              residual=_target_row))


def _no_update_listed(u, before, after, p_x):
    return u < p_x


def _no_update_drawn(u, p_x, q_x, spent, norm):
    return u * q_x < p_x


def no_residual_update(tokens, parents, draft_probs, target_probs, greedy, seed):
    """Every sibling tested against the target row itself (min(1, p(x) / q(x)), listed:
    u < p(x)), never against the residual its rejected elder siblings left."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(accept_listed=_no_update_listed, accept_drawn=_no_update_drawn))


def _node_coin(node, current):
    return NODE_COIN + current + 1


def shared_sibling_coin(tokens, parents, draft_probs, target_probs, greedy, seed):
    """Drawn children: one coin per node, shared by its siblings, each tested
    independently against the residual (listed children use one coin per node by design,
    compared with the running sum: correct)."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(sibling_coin=_node_coin))


def _threshold_listed(u, before, after, p_x):
    return (u * THRESHOLD_ACC < after) | (p_x >= THRESHOLD_SINGLE)


def _threshold_drawn(u, p_x, q_x, spent, norm):
    w = (p_x - spent * q_x).clamp_min(0.0)
    return ((w > 0) & (u * q_x * norm * THRESHOLD_ACC < w)) | (p_x >= THRESHOLD_SINGLE)


def thresholds_below_one(tokens, parents, draft_probs, target_probs, greedy, seed):
    """SGLang's thresholds set below 1: a child is accepted when coin <= P / threshold_acc
    or when its own target probability reaches threshold_single (both 0.8 here)."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(accept_listed=_threshold_listed, accept_drawn=_threshold_drawn))


def _float32_noise(seed, batch, nodes, vocab, device) -> Draws:
    """Exp(1) noise as CUDA's float32 ``exponential_`` draws it: -log u with u on float32's
    grid of (0, 1], (k + 1) 2^-24, and never below 2^-24 (where -log u would be 0)."""
    draws = counter_draws(seed, batch, nodes, vocab, device)
    grid = 2.0 ** FLOAT32_BITS

    def noise(requests, weights):
        u = torch.exp(-draws.noise(requests, weights))
        coarse = -torch.log(((torch.floor(u * grid) + 1.0) / grid).float())
        return coarse.clamp_min(1.0 / grid).double()
    return Draws(draws.coin, noise)


def residual_fp32_noise(tokens, parents, draft_probs, target_probs, greedy, seed):
    """The last token raced on float32 noise with CUDA's 2^-24 floor."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(draws=_float32_noise))


def _next_slot_parents(parent_ids):
    """Each node's parent read from the next slot (the last reads -1)."""
    shifted = torch.full_like(parent_ids, -1)
    shifted[:, :-1] = parent_ids[:, 1:]
    return shifted


def parent_off_by_one(tokens, parents, draft_probs, target_probs, greedy, seed):
    """A node's parent read one slot off (parent_ids[b, i + 1])."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(parents=_next_slot_parents))


def _batch_generator(seed, batch, nodes, vocab, device) -> Draws:
    """One generator for the whole batch: the coins of all requests drawn as one block
    [B, 2 (N + 1)], then the noise as one block [B, V], in batch order."""
    generator = seeded_generator(device, seed)
    table = torch.rand((batch, 2 * (nodes + 1)), dtype=torch.float64, device=device,
                       generator=generator)
    block = torch.empty((batch, vocab), dtype=torch.float64, device=device)
    block.exponential_(generator=generator)
    index = torch.arange(batch, device=device)

    def coin(which):
        column = torch.where(which >= NODE_COIN, nodes + 1 + (which - NODE_COIN), which)
        return table[index, column.clamp(max=2 * nodes + 1)]
    return Draws(coin, lambda requests, weights: block[requests])


def shared_generator(tokens, parents, draft_probs, target_probs, greedy, seed):
    """All requests' coins and noise from one generator in batch order."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(draws=_batch_generator))


def _unfilled(weights, noise):
    return race(weights, torch.ones_like(noise))


def noise_never_drawn(tokens, parents, draft_probs, target_probs, greedy, seed):
    """The last token raced against a noise buffer never filled (ones): every request
    under every seed draws its residual's mode."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(race=_unfilled))


def _listed_rule_residual(target_rows, draft_rows, spent, children):
    p = target_rows.to(torch.float64)
    left = torch.where(children, 0.0, p)
    return torch.where((left > 0).any(dim=1, keepdim=True), left, p)


def drawn_residual_as_listed(tokens, parents, draft_probs, target_probs, greedy, seed):
    """After drawn children are rejected, the last token drawn from p without the children's
    tokens (the rule for listed children) instead of max(p - C q, 0): tokens the draft
    covered but did not draw come back, sequences of probability 0 that validation lets
    through."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(residual=_listed_rule_residual))


HELD = 16               # children triton-tree-rejection holds in registers (KIDS)


def _quarter_width(vocab: int) -> int:
    """Q of triton_race.quarter_width: the power of two at or above V / 4, in [16, 512]."""
    return min(512, max(16, 1 << (max(1, -(-vocab // 4)) - 1).bit_length()))


def _quarter_two_kept(target_rows, draft_rows, spent, children):
    """Listed, at a node with more than HELD children (triton-tree-rejection's slot loop):
    the children whose token lies in the second quarter of a chunk (column c with
    (c // Q) mod 4 = 1, Q = quarter_width(V)) are left in the residual."""
    if draft_rows is not None:
        return residual(target_rows, draft_rows, spent, children)
    columns = torch.arange(children.shape[1], device=children.device)
    second = (columns // _quarter_width(children.shape[1])) % 4 == 1
    many = children.sum(dim=1, keepdim=True) > HELD
    return residual(target_rows, None, spent, children & ~(many & second))


def children_quarter_missed(tokens, parents, draft_probs, target_probs, greedy, seed):
    """The slow path's mask of the children (more than a program holds) compares the second
    quarter of each chunk with the first quarter's columns (``j`` for ``j + Q``): a rejected
    child there comes back as the last token (found by ``sampling-harness mutate`` in
    triton-tree-rejection, ``without_children``)."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(residual=_quarter_two_kept))


def _no_fallback(target_rows, draft_rows, spent, children):
    """The residual as it is, empty or not: an empty one scores -1 everywhere and the race's
    argmax returns column 0."""
    p = target_rows.to(torch.float64)
    if draft_rows is None:
        return torch.where(children, 0.0, p)
    return (p - spent[:, None] * draft_rows.to(torch.float64)).clamp_min(0.0)


def empty_residual_token_0(tokens, parents, draft_probs, target_probs, greedy, seed):
    """No fallback where the residual comes out empty: the race over an all-zero residual
    returns token 0 instead of a draw from p / sum p (the re-draw that
    triton-tree-rejection's ``last_token`` makes when ``found`` is False)."""
    return tree_verify(tokens, parents, draft_probs, target_probs, greedy, seed,
                       Pieces(residual=_no_fallback))
