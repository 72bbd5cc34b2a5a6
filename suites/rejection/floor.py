"""The memory floor of a rejection call: it depends on the inputs' values, not only their shapes.

A family's floor (``BenchSpec.floor_bytes``) is the fewest bytes a kernel must move given its
inputs. For most families that is the inputs read once and the output written. Rejection
sampling is different: the law needs a row of the target and draft probabilities only where
a draft is rejected (the residual max(p - q, 0) is drawn from that row pair), so a kernel
that reads every row does work the law does not ask for. Its floor is therefore an
expectation over the call's own randomness, computed exactly from the inputs.

``rejection_floor_bytes``, per request b with drafts d_0 .. d_{n-1}:

* probabilistic: position i is reached with probability R_i = prod_{j < i} a_j, where
  a_j = min(1, p_j(d_j) / q_j(d_j)) is the acceptance probability (q = 1 without draft
  probabilities; a_j = 1 where q_j(d_j) = 0 < p_j(d_j), 0 where both are 0). A reached
  position reads its draft id (8 B), p(d) and q(d) (4 B each, q only with draft
  probabilities); it is the first rejection with probability R_i (1 - a_i), and then the
  residual's rows p_i and q_i are read whole (4 V B each, the target row alone without draft
  probabilities);
* greedy: the positions up to the first one whose draft is not the (first) argmax of p_i,
  that one included, each read its draft id and its target row whole (the argmax needs it);
  a request that matches everywhere reads all n;
* every call writes its output, 8 (K + 1) B a request.

Reading the bonus ids, the counts and the greedy flags is left out (a few bytes a request).
The expectation is over the acceptance uniforms only; the inputs are fixed, so the figure is
what the median call of a bench entry (fresh seeds, one set of inputs) must move on average.
"""

from __future__ import annotations

import torch


def acceptance(p_d: torch.Tensor, q_d: torch.Tensor | None) -> torch.Tensor:
    """float64 a = P(u q < p) = min(1, p / q) for u uniform on [0, 1) (1 without q; 1 where
    q = 0 < p, 0 where p = 0)."""
    p = p_d.double()
    if q_d is None:
        return (p > 0).double()
    q = q_d.double()
    return torch.where(q > 0, torch.clamp(p / torch.where(q > 0, q, 1.0), max=1.0),
                       (p > 0).double())


def padded(values: torch.Tensor, counts: torch.Tensor, width: int, fill: float) -> torch.Tensor:
    """[B, width] float64: each request's per-draft ``values`` (flat, in request order),
    ``fill`` past its count."""
    batch = counts.numel()
    out = torch.full((batch, width), fill, dtype=torch.float64, device=values.device)
    positions = torch.arange(width, device=values.device)
    live = positions[None, :] < counts[:, None]
    out[live] = values.double()
    return out


def reach(accept: torch.Tensor) -> torch.Tensor:
    """R [B, K]: R_i = prod_{j < i} a_j (an exclusive cumulative product)."""
    ones = torch.ones_like(accept[:, :1])
    return torch.cumprod(torch.cat([ones, accept[:, :-1]], dim=1), dim=1)


def rejection_floor_bytes(inputs: dict) -> int:
    """The expected bytes one call of family ``rejection`` must move on ``inputs`` (the
    module docstring's model), rounded to an int."""
    target = inputs["target_probs"]
    draft = inputs["draft_probs"]
    ids = inputs["draft_token_ids"]
    device = target.device
    counts = torch.as_tensor(list(inputs["num_draft_tokens"]), dtype=torch.int64,
                             device=device)
    batch, width = counts.numel(), int(counts.max()) if counts.numel() else 0
    written = 8 * batch * (width + 1)
    if batch == 0 or width == 0:
        return written
    vocab = target.shape[1]
    rows = torch.arange(ids.numel(), device=device)
    p_d = target[rows, ids]
    q_d = None if draft is None else draft[rows, ids]
    greedy = inputs["greedy"].to(device)
    greedy_rows = torch.repeat_interleave(greedy, counts)
    match = torch.zeros(ids.numel(), dtype=torch.float64, device=device)
    if bool(greedy_rows.any()):
        picked = greedy_rows.nonzero()[:, 0]
        match[picked] = (target[picked].argmax(dim=1) == ids[picked]).double()
    a = torch.where(greedy_rows, match, acceptance(p_d, q_d))
    reached = reach(padded(a, counts, width, 1.0))
    live = torch.arange(width, device=device)[None, :] < counts[:, None]
    reached = torch.where(live, reached, 0.0)
    rejected = reached * (1.0 - padded(a, counts, width, 1.0))
    row_pair = 4 * vocab * (1 if draft is None else 2)
    gathered = 8 + 4 * (1 if draft is None else 2)
    per_request = torch.where(greedy[:, None], reached * (8 + 4 * vocab),
                              reached * gathered + rejected * row_pair).sum(dim=1)
    return int(round(float(per_request.sum()))) + written
