"""Building the calls of family ``tree-rejection`` and tallying their outputs on the device.

A case is one tree shape over one model (suites/tree_rejection/models.py), with listed
children (fixed tokens, no draft probs) or drawn ones. ``CaseSampler`` makes the contract's
inputs for R replicas of it: listed trees are tiled once; drawn trees are drawn afresh for
every call on the device, each child's token from its parent's draft row by the inverse
CDF on float64 cumulative sums with float64 uniforms (never a float32 sampler, which would
bring its own tail bias), and every row is gathered from the model by the node's path. So
two nodes with the same path get the same rows, as the contract states.

``stack`` pads a list of heterogeneous trees into one batch (tokens and parents -1, rows
uniform after each request's last node). ``cells`` maps returned rows to the cells of
``reference.tree_rejection.flat_law`` (length l, base-V code).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sampling_harness.checks.calls import count_cells
from sampling_harness.reference.tree_rejection import (
    TreeModel,
    cell_offsets,
    depths,
    node_paths,
    path_offsets,
)


@dataclass(frozen=True, eq=False)
class TreeCase:
    """One tree over one model: ``tokens`` the listed children's tokens, None for drawn."""

    name: str
    parents: tuple[int, ...]
    model: TreeModel
    tokens: np.ndarray | None

    @property
    def mode(self) -> str:
        return "drawn" if self.tokens is None else "listed"

    @property
    def depth(self) -> int:
        return int(depths(self.parents).max(initial=0))

    @property
    def vocab(self) -> int:
        return self.model.vocab


class CaseSampler:
    """The inputs of R replicas of one case (module docstring); ``greedy`` marks them all."""

    def __init__(self, case: TreeCase, device: torch.device, greedy: bool = False):
        model, self.case, self.device, self.greedy = case.model, case, device, greedy
        self.target = torch.as_tensor(model.target, device=device)
        self.draft = torch.as_tensor(model.draft, device=device)
        cdf = torch.cumsum(self.draft.to(torch.float64), dim=1)
        self.cdf, self.total = cdf, cdf[:, -1:]
        positive = torch.arange(model.vocab, device=device) * (self.draft > 0)
        self.last = positive.max(dim=1).values          # the last token of positive q
        self.offsets = torch.as_tensor(path_offsets(model.vocab, model.depth), device=device)
        self.node_depth = depths(case.parents)
        if case.tokens is not None:
            paths = node_paths(case.parents, case.tokens)
            self.fixed = torch.as_tensor([0] + [model.index(p) for p in paths], device=device)
        self.tiled: dict | None = None

    def tokens_and_paths(self, replicas: int, generator: torch.Generator):
        """(tokens int64 [R, N], path rows int64 [R, N + 1])."""
        nodes, vocab = len(self.case.parents), self.case.vocab
        if self.case.tokens is not None:
            tokens = torch.as_tensor(self.case.tokens, device=self.device).repeat(replicas, 1)
            return tokens, self.fixed.repeat(replicas, 1)
        rows = torch.zeros((replicas, nodes + 1), dtype=torch.int64, device=self.device)
        tokens = torch.empty((replicas, nodes), dtype=torch.int64, device=self.device)
        u = torch.rand((replicas, nodes), dtype=torch.float64, device=self.device,
                       generator=generator)
        for i, parent in enumerate(self.case.parents):
            above, d = rows[:, parent + 1], int(self.node_depth[i])
            level = (self.total[above] * u[:, i:i + 1]).contiguous()
            token = torch.searchsorted(self.cdf[above], level, right=True).squeeze(1)
            tokens[:, i] = torch.minimum(token, self.last[above])
            rows[:, i + 1] = self.offsets[d] + (above - self.offsets[d - 1]) * vocab + tokens[:, i]
        return tokens, rows

    def inputs(self, replicas: int, generator: torch.Generator) -> dict:
        """The contract's inputs (all but the seed) of ``replicas`` copies of the case."""
        if self.case.tokens is not None and self.tiled is not None \
                and self.tiled["greedy"].shape[0] >= replicas:
            return {name: None if value is None else value[:replicas]
                    for name, value in self.tiled.items()}
        tokens, rows = self.tokens_and_paths(replicas, generator)
        parents = torch.as_tensor(self.case.parents, dtype=torch.int64, device=self.device)
        made = {"draft_token_ids": tokens,
                "parent_ids": parents.reshape(1, -1).repeat(replicas, 1),
                "draft_probs": self.draft[rows] if self.case.tokens is None else None,
                "target_probs": self.target[rows],
                "greedy": torch.full((replicas,), self.greedy, dtype=torch.bool,
                                     device=self.device)}
        if self.case.tokens is not None:
            self.tiled = made
        return made


def per_call(ctx, nodes: int, vocab: int) -> int:
    """Trees per call within the memory bound: (N + 1) V elements each."""
    return max(1, ctx.max_call_elements // ((nodes + 1) * vocab))


def cells(out: torch.Tensor, vocab: int) -> torch.Tensor:
    """int64 [B]: each validated row's cell in ``flat_law`` order."""
    length = (out >= 0).sum(dim=1)
    code = torch.zeros_like(length)
    for j in range(out.shape[1]):
        code = torch.where(j < length, code * vocab + out[:, j], code)
    offsets = torch.as_tensor(cell_offsets(vocab, out.shape[1]), device=out.device)
    return offsets[length] + code


def tally(ctx, case: TreeCase, trees: int) -> np.ndarray:
    """Counts over the case's cells of ``trees`` returned sequences (fresh draws per call)."""
    vocab, size = case.vocab, int(cell_offsets(case.vocab, case.depth + 1)[-1])
    counts = torch.zeros(size, dtype=torch.int64, device=ctx.device)
    sampler, seeds = CaseSampler(case, ctx.device), ctx.seeds()
    generator = torch.Generator(device=ctx.device)
    step, done = per_call(ctx, len(case.parents), vocab), 0
    while done < trees:
        n = min(step, trees - done)
        generator.manual_seed(next(seeds))
        out = ctx.runner.call(sampler.inputs(n, generator), next(seeds))
        count_cells(counts, cells(out, vocab))
        done += n
    return counts.cpu().numpy()


def stack(requests: list[dict], vocab: int, device: torch.device, drawn: bool) -> dict:
    """One batch from trees of any sizes: each request a dict of ``parents``, ``tokens``
    (int [n]), ``target`` and ``draft`` rows (float32 [n + 1, V]) and ``greedy``; padded
    with -1 tokens and parents and uniform rows."""
    nodes = max((len(r["parents"]) for r in requests), default=0)
    batch = len(requests)
    tokens = np.full((batch, nodes), -1, np.int64)
    parents = np.full((batch, nodes), -1, np.int64)
    target = np.full((batch, nodes + 1, vocab), 1.0 / vocab, np.float32)
    draft = target.copy()
    for b, r in enumerate(requests):
        n = len(r["parents"])
        tokens[b, :n], parents[b, :n] = r["tokens"], r["parents"]
        target[b, :n + 1], draft[b, :n + 1] = r["target"], r["draft"]
    as_device = lambda a: torch.as_tensor(np.ascontiguousarray(a), device=device)
    return {"draft_token_ids": as_device(tokens), "parent_ids": as_device(parents),
            "draft_probs": as_device(draft) if drawn else None,
            "target_probs": as_device(target),
            "greedy": torch.tensor([bool(r["greedy"]) for r in requests], dtype=torch.bool,
                                   device=device)}


def drawn_tokens(model, parents, rng: np.random.Generator) -> np.ndarray:
    """int64 [N]: one draw of a drawn tree's tokens (each from its parent's draft row)."""
    tokens = np.zeros(len(parents), np.int64)
    paths: list[tuple[int, ...]] = []
    for i, parent in enumerate(parents):
        path = () if parent < 0 else paths[parent]
        q = model.rows(path)[1].astype(np.float64)
        tokens[i] = rng.choice(q.size, p=q / q.sum())
        paths.append(path + (int(tokens[i]),))
    return tokens


def request_of(model, parents, tokens, greedy: bool = False) -> dict:
    """A ``stack`` request: the rows of every node from the model (``rows(path)``)."""
    pairs = [model.rows(path) for path in [()] + node_paths(parents, tokens)]
    return {"parents": np.asarray(parents, np.int64), "tokens": np.asarray(tokens, np.int64),
            "target": np.stack([p for p, _ in pairs]), "draft": np.stack([q for _, q in pairs]),
            "greedy": greedy}
