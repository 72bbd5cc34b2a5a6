"""Running a batch of request laws many times: drafts drawn from q, outputs tallied on device.

One call holds R replicas of the batch back to back (request b of replica r is row
r B + b), as many as the memory bound allows, so different laws sit side by side and a
kernel that reads another request's rows mixes them up visibly. Drafts are drawn by the
harness from q itself, exactly: inverse CDF on float64 cumulative sums with float64
uniforms (never a float32 sampler, which would bring its own tail bias). Tallies stay on the
device; only the per-request tables come back.
"""

from __future__ import annotations

import numpy as np
import torch

from sampling_harness.checks.calls import count_cells
from sampling_harness.reference.rejection import RejectionLaws


def batch_inputs(laws: RejectionLaws, drafts: torch.Tensor | None, replicas: int,
                 device: torch.device) -> dict:
    """The contract's inputs (all but the seed) for ``replicas`` copies of ``laws``; the
    drafts None when each call brings its own (``first_replicas``)."""
    def tile(array: np.ndarray) -> torch.Tensor:
        tensor = torch.as_tensor(array, device=device)
        return tensor.repeat(replicas, *([1] * (tensor.dim() - 1)))

    return {"draft_token_ids": drafts.to(device) if drafts is not None else None,
            "num_draft_tokens": list(laws.num_draft_tokens) * replicas,
            "draft_probs": tile(laws.draft) if laws.draft is not None else None,
            "target_probs": tile(laws.target),
            "bonus_token_ids": tile(laws.bonus),
            "greedy": tile(laws.greedy)}


class DraftSampler:
    """Drafts for replicas of a batch: the fixed drafts, or exact draws from each row's q."""

    def __init__(self, laws: RejectionLaws, device: torch.device):
        self.laws, self.device = laws, device
        if laws.fixed_drafts is None:
            q = torch.as_tensor(laws.draft, device=device, dtype=torch.float64)
            self.cdf = torch.cumsum(q, dim=1)
            positive = torch.arange(q.shape[1], device=device) * (q > 0)
            self.last = positive.max(1).values  # the last token of positive probability

    def draw(self, replicas: int, generator: torch.Generator) -> torch.Tensor:
        """int64 [replicas * T], replica-major, on the device."""
        if self.laws.fixed_drafts is not None:
            return torch.as_tensor(self.laws.fixed_drafts, device=self.device).repeat(replicas)
        total = self.cdf[:, -1:]
        u = torch.rand((self.cdf.shape[0], replicas), dtype=torch.float64,
                       device=self.device, generator=generator)
        ids = torch.searchsorted(self.cdf, (u * total).contiguous(), right=True)
        ids = torch.minimum(ids, self.last[:, None])
        return ids.t().reshape(-1)


def first_replicas(tiled: dict, laws: RejectionLaws, replicas: int) -> dict:
    """The inputs of ``batch_inputs`` for the first ``replicas`` copies, as views of a
    larger tiling ``tiled`` (replica-major, so a prefix of its rows): tiled once per check,
    not per call (the runner hands each call its own guarded copy)."""
    rows, batch = laws.target.shape[0], laws.batch
    cut = {"target_probs": rows, "draft_probs": rows, "bonus_token_ids": batch,
           "greedy": batch, "num_draft_tokens": batch}
    return {name: value[:cut[name] * replicas] if name in cut and value is not None
            else value for name, value in tiled.items()}


def replicas_per_call(ctx, laws: RejectionLaws) -> int:
    """The most replicas one call may take within the memory bound."""
    rows = max(1, laws.target.shape[0])
    return max(1, ctx.max_call_elements // (rows * laws.vocab))


def accepted_and_emitted(out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(A, Y) per row of a validated output: accepted drafts, and the token emitted after."""
    accepted = (out >= 0).sum(1) - 1
    return accepted, out.gather(1, accepted[:, None]).squeeze(1)


def tally(ctx, laws: RejectionLaws, replicas: int, slots: bool = False) -> list[np.ndarray]:
    """Run ``replicas`` copies of ``laws``; per request b a table [n_b + 1, V] of counts:
    the joint (A = j, Y = y) table, or with ``slots`` the token in slot i (rows reaching
    slot i). Each call is validated exactly by the runner."""
    batch, vocab = laws.batch, laws.vocab
    cells = (np.asarray(laws.num_draft_tokens) + 1) * vocab
    base = torch.as_tensor(np.concatenate([[0], np.cumsum(cells)[:-1]]), device=ctx.device)
    counts = torch.zeros(int(cells.sum()), dtype=torch.int64, device=ctx.device)
    sampler, seeds = DraftSampler(laws, ctx.device), ctx.seeds()
    per_call, done = min(replicas_per_call(ctx, laws), replicas), 0
    tiled = batch_inputs(laws, None, per_call, ctx.device)
    generator = torch.Generator(device=ctx.device)
    while done < replicas:
        copies = min(per_call, replicas - done)
        generator.manual_seed(next(seeds))
        inputs = first_replicas(tiled, laws, copies)
        inputs["draft_token_ids"] = sampler.draw(copies, generator)
        out = ctx.runner.call(inputs, next(seeds))
        request = torch.arange(out.shape[0], device=ctx.device) % batch
        if slots:   # placeholders weigh 0 (a mask would read its size back to the host)
            slot = torch.arange(out.shape[1], device=ctx.device)
            where = base[request][:, None] + slot[None, :] * vocab + out.clamp(min=0)
            count_cells(counts, where, (out >= 0).long())
        else:
            accepted, emitted = accepted_and_emitted(out)
            count_cells(counts, base[request] + accepted * vocab + emitted)
        done += copies
    flat = counts.cpu().numpy()
    return [flat[start:start + size].reshape(-1, vocab)
            for start, size in zip(base.cpu().numpy(), cells, strict=True)]
