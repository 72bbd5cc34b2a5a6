"""Family ``tree-rejection``: tree and multi-draft speculative verification.

Contract::

    fn(draft_token_ids, parent_ids, draft_probs, target_probs, greedy, seed)
        -> int64 [B, W], D + 1 <= W <= N + 1

draft_token_ids int64 [B, N]: each request's tree nodes, -1 after its last node;
parent_ids int64 [B, N]: each node's parent, -1 for a child of the root (a parent comes
before its children, siblings in the order they were drafted); target_probs float32
[B, N + 1, V]: row 0 the target's law at the root, row i + 1 its law after node i;
draft_probs float32 [B, N + 1, V] or None: given, row 0 the law the root's children were
drawn from and row i + 1 the law node i's children were drawn from, each child
independently; None, the children were chosen deterministically (top-k of a draft model,
n-gram lookup) and siblings are distinct. greedy bool [B]; seed an int in [0, 2^31), or an
int64 [B] of per-request seeds (-1 unseeded) for a kernel whose metadata says so.

Returns, per request, the accepted path's tokens from the root, then one token drawn at the
last accepted node, then -1 in every column after it. The width W is the kernel's choice
within D + 1 <= W <= N + 1, D the deepest path's length in the batch (0 without nodes), N
the node slots per request: D + 1 fits every path, and N + 1, fixed by the input shapes
alone, lets a CUDA graph hold the call (no host read of D). The returned
tokens y_1 .. y_m follow the target: y_1 from row 0 and, while y_1 .. y_j is a path of the
tree, y_(j+1) from the row of its node; the sequence ends with the first token that leaves
the tree or with the draw after a leaf. With listed children (draft_probs None) this holds
for any fixed tree; with drawn children averaged over the draws of the tree, so the harness
draws the tree afresh on every call. Rows are read as given, never renormalised; where the
residual the last token is drawn from has no mass (listed children holding all of p's
support while their p sums below 1; drawn rows with max(p - C q, 0) = 0 after a rejection,
where q sums above 1), the last token is drawn from p / sum p, and may then be a child's
token (reference/tree_rejection.py ``fallback``). A greedy request follows the argmax
(lowest index on ties) and emits the argmax where the tree has no matching child. Same
inputs and seed, same output; requests are independent (with an int seed request b's output
depends on (seed, b) and its own rows only). Every input is read-only.

``validate_output`` holds every call to what is certain whatever the draws (it is the
``validity`` check's core, run on every call of every check).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sampling_harness.checks.flags import fail_first
from sampling_harness.errors import KernelFailure


@dataclass(frozen=True)
class TreeBudget:
    """The effects the checks of family ``tree-rejection`` must detect (counts follow)."""

    name: str
    law_tv: float              # total variation of a returned-sequence law, pooled cells (law)
    trees_per_shape: int       # Hypothesis trees per shape kind and draft mode (law)
    length_tv: float           # total variation of an accepted-length law (acceptance)
    never_tests: int           # coins compared at a child of target probability 0, per mode
    pairs: int                 # pairs per pairing (independence)
    tail_scales: tuple[float, ...]   # rare tokens' probability over the head's (tail)
    tail_expected: float       # expected rare first tokens per scale under H0 (tail)
    wide_law: bool = True      # the law's ``wide`` case (validity sweeps its path always)
    power: float = 0.99


BUDGETS = {
    "smoke": TreeBudget("smoke", law_tv=0.15, trees_per_shape=1, length_tv=0.1,
                        never_tests=2**12, pairs=2**10, tail_scales=(1e-2,),
                        tail_expected=50.0, wide_law=False),
    "quick": TreeBudget("quick", law_tv=0.05, trees_per_shape=1, length_tv=0.03,
                        never_tests=2**16, pairs=2**12, tail_scales=(1e-2, 1e-4, 1e-6),
                        tail_expected=100.0),
    "standard": TreeBudget("standard", law_tv=0.01, trees_per_shape=2, length_tv=0.005,
                           never_tests=2**27, pairs=2**16,
                           tail_scales=(1e-2, 1e-4, 1e-6, 1e-8), tail_expected=200.0),
    "thorough": TreeBudget("thorough", law_tv=0.005, trees_per_shape=4, length_tv=0.002,
                           never_tests=2**28, pairs=2**18,
                           tail_scales=(1e-2, 1e-4, 1e-6, 1e-8, 1e-10),
                           tail_expected=400.0),
}


def node_depths(parents: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """int64 [B, N]: each valid node's path length (parents come first), 0 for padding."""
    depth = torch.zeros_like(parents)
    for i in range(parents.shape[1]):
        above = depth.gather(1, parents[:, i:i + 1].clamp(min=0)).squeeze(1)
        depth[:, i] = torch.where(valid[:, i], torch.where(parents[:, i] < 0, 1, above + 1), 0)
    return depth


def tree_depths(parents: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """int64 [B]: each request's deepest path (0 without nodes)."""
    if tokens.numel() == 0:
        return torch.zeros(tokens.shape[0], dtype=torch.int64, device=tokens.device)
    return node_depths(parents, tokens >= 0).max(1).values


def _layout(out: object, inputs: dict) -> torch.Tensor:
    """The output's type, shape (any width W, D + 1 <= W <= N + 1) and layout: per row
    tokens, at most its own tree's depth plus one, then -1 to the row's end."""
    tokens, target = inputs["draft_token_ids"], inputs["target_probs"]
    (batch, nodes), own = tokens.shape, tree_depths(inputs["parent_ids"], tokens)
    least = (int(own.max()) if batch else 0) + 1
    if not isinstance(out, torch.Tensor):
        raise KernelFailure(f"returned {type(out).__name__}, expected a torch.Tensor")
    if out.dtype != torch.int64:
        raise KernelFailure(f"returned dtype {out.dtype}, expected torch.int64")
    if out.dim() != 2 or out.shape[0] != batch or not least <= out.shape[1] <= nodes + 1:
        raise KernelFailure(f"returned shape {tuple(out.shape)}, expected ({batch}, W) with "
                            f"D + 1 = {least} <= W <= N + 1 = {nodes + 1} (D = {least - 1}, "
                            f"the deepest path; N = {nodes} node slots)")
    if out.device != target.device:
        raise KernelFailure(f"returned output on {out.device}, expected {target.device}")
    written = out >= 0
    length = written.sum(1)
    slots = torch.arange(out.shape[1], device=out.device)
    prefix = slots[None, :] < length[:, None]
    fail_first(((written != prefix) | (~prefix & (out != -1))).any(1),
               lambda b: f"row {out[b].tolist()} is not tokens followed by -1 placeholders")
    fail_first(length == 0, lambda b: "no token returned (the row is all -1)")
    fail_first(length > own + 1, lambda b: (
        f"row {out[b].tolist()} holds {int(length[b])} tokens, more than its tree's deepest "
        f"path plus one ({int(own[b])} + 1): every column past the path must be -1"))
    vocab = target.shape[2]
    fail_first((out >= vocab).any(1),
               lambda b: f"row {out[b].tolist()} holds a token >= V = {vocab}")
    return out


def validate_output(out: object, inputs: dict) -> torch.Tensor:
    """Check a ``tree-rejection`` output exactly against its inputs; return it.

    Certain under the contract whatever the draws: int64 [B, W] on the device, D + 1 <= W
    <= N + 1, per row tokens (at most its tree's depth plus one) then -1 to the row's end;
    the accepted tokens y_1 .. y_(m-1) are the tokens of a path of the tree
    (following parent links), each of positive target probability at its parent; the last
    token has positive target probability at the last node and is no child's token there
    (the sequence ends with the first token that leaves the tree) unless the residual there
    is empty (``empty_residuals``: then it is drawn from p); a greedy request takes
    the argmax (the first maximum) at every node and stops where no child holds it. Where
    siblings repeat a token (drawn children) any of them may be the accepted node: the
    check asks for some node path consistent with the whole row.
    """
    out = _layout(out, inputs)
    tokens, parents = inputs["draft_token_ids"], inputs["parent_ids"]
    target, greedy = inputs["target_probs"], inputs["greedy"]
    batch, nodes = tokens.shape
    width, vocab = out.shape[1], target.shape[2]
    device = out.device
    valid = tokens >= 0
    accepted = (out >= 0).sum(1) - 1
    above = (parents + 1).clamp(min=0)                          # the parent's row
    base = torch.arange(batch, device=device)[:, None] * (nodes + 1)
    flat = target.reshape(-1)
    p_node = flat[((base + above) * vocab + tokens.clamp(min=0)).reshape(-1)].view(batch, nodes)
    best = target.argmax(2) if bool(greedy.any()) else None     # [B, N + 1]
    node_ok = valid & (p_node > 0)
    if best is not None:
        node_ok &= ~greedy[:, None] | (best.gather(1, above) == tokens)
    at = torch.ones(batch, dtype=torch.bool, device=device)     # the root is the node
    here = torch.zeros((batch, nodes), dtype=torch.bool, device=device)
    for j in range(width - 1):
        going = j < accepted
        y = out[:, j:j + 1]
        from_here = torch.where(parents < 0, at[:, None], here.gather(1, parents.clamp(min=0)))
        path = valid & from_here & (tokens == y)
        fail_first(going & ~path.any(1), lambda b, j=j: (
            f"token {int(out[b, j])} at slot {j} is no child of the path"
            f" {out[b, :j].tolist()} (the path must follow parent links)"))
        step = path & node_ok
        fail_first(going & ~step.any(1), lambda b, j=j: (
            f"accepted token {int(out[b, j])} at slot {j} has target probability 0 at its "
            "node" if not bool(greedy[b]) else
            f"greedy request accepted token {int(out[b, j])} at slot {j}, not its node's "
            "argmax"))
        here = torch.where(going[:, None], step, here)
        at = at & ~going
    _validate_last(out, inputs, accepted, at, here, best)
    return out


def _validate_last(out, inputs, accepted, at, here, best) -> None:
    """The last token: positive at some candidate last node, no child's token there unless
    the residual there is empty (``empty_residuals``), and the argmax for greedy requests."""
    tokens, parents = inputs["draft_token_ids"], inputs["parent_ids"]
    target, greedy = inputs["target_probs"], inputs["greedy"]
    batch, nodes = tokens.shape
    last = out.gather(1, accepted[:, None])                     # [B, 1]
    where = torch.cat([at[:, None], here], dim=1)               # candidates: root, nodes
    p_last = target.gather(2, last[:, :, None].expand(-1, nodes + 1, 1)).squeeze(2)
    child = (tokens >= 0) & (tokens == last)
    has_child = torch.zeros((batch, nodes + 1), dtype=torch.int64, device=out.device)
    has_child.scatter_reduce_(1, parents + 1, child.long(), reduce="amax")
    ok = where & (p_last > 0)
    fail_first(~ok.any(1), lambda b: f"last token {int(last[b])} has target probability 0 at "
                                     "its node")
    leaves = ok & (has_child == 0)
    if not bool(leaves.any(1).all()):                           # a child's token: allowed
        leaves |= ok & empty_residuals(inputs, ok & ~leaves & ~greedy[:, None])
    ok = leaves
    fail_first(~ok.any(1), lambda b: (
        f"last token {int(last[b])} is a child's token at its node, whose residual is not "
        "empty (the sequence ends with the first token that leaves the tree)"))
    if best is not None:
        greedy_ok = ok & (best == last)
        fail_first(greedy & ~greedy_ok.any(1),
                   lambda b: f"greedy request ended with {int(last[b])}, not its node's argmax")


def empty_residuals(inputs: dict, asked: torch.Tensor) -> torch.Tensor:
    """bool [B, N + 1]: at the ``asked`` nodes (column 0 the root, n + 1 node n), whether
    the residual a random request draws its last token from there after rejecting all the
    node's children is empty, so that the contract draws it from p / sum p instead (and it
    may be a child's token). Listed: p is 0 off the children's tokens. Drawn: after the k
    children, max(p - C_k q, 0), C_0 = 0, c_0 = 1, C_(j+1) = C_j + c_j, c_j = sum_v
    max(p - C_j q, 0) in float64, has no weight that is positive as float32 (the race's
    scores). A node without children is never empty (p has mass)."""
    tokens, parents = inputs["draft_token_ids"], inputs["parent_ids"]
    target, draft = inputs["target_probs"], inputs["draft_probs"]
    empty = torch.zeros(asked.shape, dtype=torch.bool, device=asked.device)
    b, n = asked.nonzero(as_tuple=True)
    if b.numel() == 0:
        return empty
    kids = (parents[b] == (n - 1)[:, None]) & (tokens[b] >= 0)          # [M, N]
    p = target[b, n].to(torch.float64)                                   # [M, V]
    if draft is None:
        held = torch.zeros(p.shape, dtype=torch.int64, device=p.device).scatter_add_(
            1, tokens[b].clamp(min=0), kids.long()) > 0
        left = torch.where(held, 0.0, p)
    else:
        q, count = draft[b, n].to(torch.float64), kids.sum(1)
        spent = torch.zeros_like(p[:, 0])
        norm = torch.ones_like(spent)
        for j in range(int(count.max()) if count.numel() else 0):
            going = j < count
            spent = torch.where(going, spent + norm, spent)
            norm = torch.where(going, (p - spent[:, None] * q).clamp_min(0.0).sum(1), norm)
        left = (p - spent[:, None] * q).clamp_min(0.0)
    empty[b, n] = kids.any(1) & ~(left.float() > 0).any(1)
    return empty
