"""The benchmark inputs of family ``tree-rejection`` and their honest memory floor.

``bench_batch("BxNxV:mode")``: B requests of N nodes over V tokens; the tree's root has 4
children and each node after them 2 (breadth first: depth 3 at N = 16); draft rows u^4
(normalised), target rows the draft's tilted by exp(N(0, 1)) (each draft accepted about
half the time); ``listed`` children are the top k of their parent's draft row (no draft
probs), ``drawn`` ones drawn from it; every fourth request greedy.

``floor_bytes``: the bytes any verifier of the contract must move, in expectation over its
draws: each request's tokens and parents (16 N) and output row (8 (D + 1)); a gathered
probability per child tested (4, drawn 8); the row it draws its last token from (its target
row, 4 V, and its draft row too, drawn, where a child was rejected there); drawn, one row
pair (8 V) for every rejection followed by another sibling (the next test needs the
residual's mass); greedy, the target row of every node it visits (its argmax). Rows never
reached are not counted. The expectation is exact, computed in float64 from the inputs
(reference/tree_rejection.py's steps: listed min(P_j, 1) - min(P_(j-1), 1), drawn
min(1, w(x) / (c q(x))) for the given children).
"""

from __future__ import annotations

import torch


def bench_parents(nodes: int) -> list[int]:
    """The bench tree: 4 children of the root, then 2 under each node in turn."""
    return [-1 if i < 4 else (i - 4) // 2 for i in range(nodes)]


def bench_batch(shape: str, device: torch.device) -> dict:
    """``BxNxV:listed`` or ``BxNxV:drawn`` (module docstring)."""
    sizes, _, mode = shape.partition(":")
    batch, nodes, vocab = (int(x) for x in sizes.lower().split("x"))
    if mode not in ("listed", "drawn"):
        raise ValueError(f"mode {mode!r}: listed or drawn")
    rows = batch * (nodes + 1)
    q = torch.rand(rows, vocab, device=device).pow_(4)
    q /= q.sum(1, keepdim=True)
    p = q * torch.randn(rows, vocab, device=device).exp_()
    p /= p.sum(1, keepdim=True)
    q, p = q.view(batch, nodes + 1, vocab), p.view(batch, nodes + 1, vocab)
    parents = torch.tensor(bench_parents(nodes), dtype=torch.int64, device=device)
    tokens = torch.empty((batch, nodes), dtype=torch.int64, device=device)
    for node in range(-1, nodes):
        kids = (parents == node).nonzero().squeeze(1)
        if kids.numel() == 0:
            continue
        row = q[:, node + 1]
        tokens[:, kids] = (row.topk(kids.numel(), dim=1).indices if mode == "listed"
                           else torch.multinomial(row, kids.numel(), replacement=True))
    return {"draft_token_ids": tokens, "parent_ids": parents.expand(batch, nodes).contiguous(),
            "draft_probs": q.contiguous() if mode == "drawn" else None,
            "target_probs": p.contiguous(),
            "greedy": torch.arange(batch, device=device) % 4 == 3}


def _walk_rows(inputs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """(expected full rows read [B], expected gathered values [B]) of the random requests
    (module docstring); greedy rows are counted by ``_greedy_rows``."""
    tokens, parents = inputs["draft_token_ids"], inputs["parent_ids"]
    target, draft = inputs["target_probs"].double(), inputs["draft_probs"]
    draft = None if draft is None else draft.double()
    batch, nodes = tokens.shape
    index = torch.arange(batch, device=tokens.device)
    reach = torch.zeros((batch, nodes + 1), dtype=torch.float64, device=tokens.device)
    reach[:, 0] = 1.0
    tested = reach.clone()                    # P(the node's next child is tested)
    spent, norm = torch.zeros_like(reach), torch.ones_like(reach)
    before = torch.zeros_like(reach)          # listed: P so far
    children = torch.zeros_like(reach)
    rows = torch.zeros(batch, dtype=torch.float64, device=tokens.device)
    gathered = torch.zeros_like(rows)
    for i in range(nodes):
        above, x = parents[:, i] + 1, tokens[:, i]
        t = tested[index, above]
        p_x = target[index, above, x]
        if draft is None:
            after = before[index, above] + p_x
            take = after.clamp(max=1.0) - before[index, above].clamp(max=1.0)
            before[index, above] = after
            reach[:, i + 1] = reach[index, above] * take
            tested[index, above] = reach[index, above] * (1.0 - after.clamp(max=1.0))
            gathered = gathered + t
        else:
            q_x = draft[index, above, x]
            again = children[index, above] > 0
            mass = (target[index, above] - spent[index, above, None] * draft[index, above]) \
                .clamp_min(0.0).sum(1)
            norm[index, above] = torch.where(again, mass, norm[index, above])
            rows += 2 * t * again
            w = (p_x - spent[index, above] * q_x).clamp_min(0.0)
            accept = torch.where(w > 0, (w / (norm[index, above] * q_x)).clamp(max=1.0), 0.0)
            reach[:, i + 1] = t * accept
            tested[index, above] = t * (1.0 - accept)
            spent[index, above] += norm[index, above]
            gathered = gathered + 2 * t
        tested[:, i + 1] = reach[:, i + 1]    # a leaf stops where it is reached
        children[index, above] += 1
    last_rows = 1.0 + (children > 0).double() if draft is not None else torch.ones_like(reach)
    rows += (tested * last_rows).sum(1)       # P(stop at a node) = tested after all children
    return rows, gathered


def _greedy_rows(inputs: dict) -> torch.Tensor:
    """Rows a greedy request reads: one per node it visits (the argmax walk is exact)."""
    tokens, parents, target = (inputs["draft_token_ids"], inputs["parent_ids"],
                               inputs["target_probs"])
    best = target.argmax(dim=2)
    batch = tokens.shape[0]
    index = torch.arange(batch, device=tokens.device)
    current = torch.full((batch,), -1, dtype=torch.int64, device=tokens.device)
    visited = torch.ones(batch, dtype=torch.float64, device=tokens.device)
    for i in range(tokens.shape[1]):
        move = (parents[:, i] == current) & (tokens[:, i] == best[index, current + 1])
        current = torch.where(move, i, current)
        visited += move
    return visited


def floor_bytes(inputs: dict) -> int:
    """The expected bytes of the module docstring (an int, for ``bench``)."""
    tokens, greedy = inputs["draft_token_ids"], inputs["greedy"]
    batch, nodes = tokens.shape
    vocab = inputs["target_probs"].shape[2]
    rows, gathered = _walk_rows(inputs)
    rows = torch.where(greedy, _greedy_rows(inputs), rows)
    gathered = torch.where(greedy, 0.0, gathered)
    width = 1 + max(_depths(inputs["parent_ids"][0].tolist()), default=0)
    return int(4 * vocab * float(rows.sum()) + 4 * float(gathered.sum())
               + batch * (16 * nodes + 8 * width + 1))


def _depths(parents: list[int]) -> list[int]:
    out: list[int] = []
    for parent in parents:
        out.append(1 if parent < 0 else out[parent] + 1)
    return out
