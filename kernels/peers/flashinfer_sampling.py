"""FlashInfer's samplers (``flashinfer.sampling``, flashinfer-python 0.7) behind the contracts
of families ``sample``, ``sample-logits`` and ``rejection``: three baselines, each a few lines
of mapping around one documented call.

What the three share, from FlashInfer's documented API:

* Seeds: every call passes the family's int seed as FlashInfer's ``seed`` with ``offset``
  0, so no generator state is read or advanced and the same (inputs, seed) give the same
  output. FlashInfer starts one Philox stream per output row, keyed by (seed, row index,
  offset): row r's draws depend on (seed, r), which is the families' int-seed contract.
  Its seed tensors are not per-request seeds in the families' sense: its documentation
  says the row index still feeds the stream, so a request moved to another batch slot draws
  differently. The adapters therefore take int seeds only (no ``per_request_seeds``
  metadata), and the per-request part of ``batch_invariance`` says "skipped: the kernel
  takes one seed per call".
* ``deterministic=True`` (FlashInfer's default): its block-wide sums do not depend on
  scheduling, so a call repeated with one seed returns the same ids.
* CUDA only: FlashInfer compiles its kernels for the GPU (JIT, on the first call); the
  families declare these peers for ``cuda`` alone, and ``check`` / ``bench`` leave them out
  on a CPU.
* Its arithmetic is float32: uniforms from ``curand_uniform`` (range (0, 1], steps of
  2^-24 just below 1), inverse-CDF sampling on float32 running sums of the row, and the
  top-p test on float32 sums of the tokens more probable than the candidate. Each
  baseline's ``may_fail`` names the checks this arithmetic can fail on CUDA, and why.

Not FlashInfer's code: the adapters call its public functions and nothing else.
"""

from __future__ import annotations

import torch

from sampling_harness.kernels.meta import baseline
from sampling_harness.kernels.rejection.request_layout import request_layout, requests_of


@baseline("FlashInfer's flashinfer.sampling.sampling_from_probs (inverse CDF on float32 "
          "running sums, a float32 uniform per row)",
          may_fail={"cuda": ("tail",)})
def flashinfer_sample(probs: torch.Tensor, seed) -> torch.Tensor:
    """Family ``sample``: ``sampling_from_probs(probs, seed=seed, offset=0)``, int32 ids.

    Covers the whole int-seed contract: a zero-probability token is never returned (only
    positive entries hold a share of the CDF; where the float32 running sum ends below the
    uniform, the last positive token is returned), row r depends on (seed, r, probs[r]).
    Per-request seeds: not taken (module docstring).

    May fail ``tail`` on CUDA: one float32 uniform and float32 running sums give every
    token a share on a 2^-24 grid of the row's mass, so a token far below 2^-24 of the mass
    accumulated before it (a rare token after the head) gets no share or a whole step; the
    last positive token takes what the sum leaves below 1. Whether the count of rare wins
    moves depends on where the head sits in the row.
    """
    from flashinfer.sampling import sampling_from_probs

    return sampling_from_probs(probs, deterministic=True, seed=int(seed), offset=0)


@baseline("FlashInfer's flashinfer.sampling.top_k_top_p_sampling_from_logits (top-k mask, "
          "softmax, then top-p by rejection rounds on float32 sums)",
          may_fail={"cuda": ("tail", "boundaries", "fit_generated", "non_finite")})
def flashinfer_sample_logits(logits: torch.Tensor, temperature: torch.Tensor,
                             top_k: torch.Tensor, top_p: torch.Tensor, seed) -> torch.Tensor:
    """Family ``sample-logits``: ``top_k_top_p_sampling_from_logits(logits / T, top_k, top_p,
    seed=seed, offset=0)`` with FlashInfer's default order (top-k, then top-p on the
    renormalised top-k set: the family's), per-row top-k and top-p tensors (FlashInfer takes
    them as they are).

    The mapping, where FlashInfer's API has no counterpart:

    * temperature: FlashInfer's function takes none. The adapter divides the logits by T
      in float32 (after upcasting bf16 and fp16 exactly, so FlashInfer's top-k mask and
      softmax run in float32, not in the logits' dtype), as engines do before calling it.
    * temperature 0 (greedy): FlashInfer has no greedy mode; those rows take the argmax of
      the logits (torch, lowest index on ties) and never use FlashInfer's draw, so the
      ``greedy`` check tests the adapter's argmax. A greedy row holding a NaN or +inf, or
      no finite logit, returns the sentinel 0 (the family's rule for invalid rows).
    * top-k <= 0 or >= V (the family's "disabled") is passed as V. FlashInfer documents k
      in (0, V); its mask kernel copies the row unchanged for k >= V, and k = 0 is
      undefined there. Ties at the k-th value are kept by its mask (every logit >= the
      k-th largest), as the family demands.
    * min-p: not taken (FlashInfer's function has no min-p argument), so the family skips
      its min-p rows and says so.

    May fail on CUDA:

    * ``tail``: a float32 inverse CDF, as ``flashinfer-sampling``; and the top-p test keeps
      a token only while the float32 sum of the more probable tokens is below top_p, which
      at top_p = 1 drops a token where that sum rounds to 1 (possible only for a token
      below about 3e-8 of the row).
    * ``boundaries``, ``fit_generated``: the same float32 top-p test at top_p just under or
      at 1.
    * ``non_finite``: FlashInfer documents nothing for rows with NaN, +inf or no finite
      logit (its ``check_nan`` raises instead of returning the family's sentinel), so such
      rows reach its kernels as they are.
    """
    from flashinfer.sampling import top_k_top_p_sampling_from_logits

    x = logits.float()                               # exact upcast; logits itself if float32
    best = x.argmax(dim=-1)                          # greedy rows: first index of the max
    best = torch.where(x.gather(1, best[:, None])[:, 0].isfinite(), best, 0)
    greedy = temperature == 0
    x = x.div_(torch.where(greedy, 1.0, temperature)[:, None])   # the family lets logits go
    vocab = x.shape[1]
    k = torch.where((top_k <= 0) | (top_k >= vocab), vocab, top_k)
    ids = top_k_top_p_sampling_from_logits(x, k, top_p, deterministic=True, seed=int(seed),
                                           offset=0)
    return torch.where(greedy, best, ids.long())


@baseline("FlashInfer's flashinfer.sampling.chain_speculative_sampling (padded [B, n] drafts, "
          "accept iff u q(d) < p(d) with u in (0, 1], float32 residual inverse CDF)",
          must_fail={"cuda": {"quick": ("batch_invariance",)}},
          may_fail={"cuda": ("validity", "acceptance_length", "joint", "fixed_drafts",
                             "marginal", "law_generated", "tail", "batch_invariance")})
def flashinfer_rejection(draft_token_ids: torch.Tensor, num_draft_tokens,
                         draft_probs: torch.Tensor | None, target_probs: torch.Tensor,
                         bonus_token_ids: torch.Tensor, greedy: torch.Tensor,
                         seed) -> torch.Tensor:
    """Family ``rejection``: the ragged layout padded to FlashInfer's, one call of
    ``chain_speculative_sampling(draft_probs, draft_token_ids, target_probs, seed=seed,
    offset=0)``, and its output put back in the family's layout; int64 [B, n + 1].

    The mapping:

    * layout: the family's drafts are back to back ([T] ids, [T, V] rows, a count per
      request); FlashInfer's are padded, [B, n] ids, [B, n, V] draft rows and [B, n + 1, V]
      target rows (the extra one for the bonus draw), n = max count. Request b's drafts go
      to its first counts[b] slots (the (first row, count) layout of triton-rejection,
      ``kernels/rejection/request_layout.py``, made without synchronising, so the call can
      be captured in a CUDA graph after one eager call with the same counts). Padding slots
      hold draft 0 with draft and target probability 0, which FlashInfer rejects for
      certain (u q < p fails at p = 0), so its emitted-draft count never passes a
      request's own count.
    * draft_probs None: q one-hot at each draft, as the family defines it.
    * the bonus token: FlashInfer draws its own from the extra target row; the adapter
      puts a one-hot row at the family's bonus token there, and writes the bonus itself
      wherever all of a request's drafts were accepted (also for requests shorter than n,
      whose next slot FlashInfer treats as a padded draft).
    * output: accepted drafts (FlashInfer's emitted-draft count), then the recovered or
      bonus token, then -1, as the family's rows.
    * greedy requests: FlashInfer has no greedy mode; the adapter takes the argmax of each
      target row (torch, lowest index on ties) and accepts drafts up to the first mismatch,
      as engines verify greedy requests apart. The ``greedy`` check tests this, not
      FlashInfer.
    * no drafts at all (n = 0): the bonus tokens, without calling FlashInfer.

    May fail on CUDA:

    * any check whose batches hold a draft with p(d) = q(d) (``validity``'s forced
      accepts and one-hot drafts, the "p = q" requests of ``acceptance_length``, ``joint``,
      ``marginal``, ``fixed_drafts`` and ``law_generated``; ``tail``): FlashInfer accepts iff
      u q(d) < p(d) with u from ``curand_uniform``, whose range includes 1, so such a draft
      is rejected when u = 1 (about 2^-25 of draws), against the contract, and the residual
      max(p - q, 0) it then samples from is empty. The exact validator fails that call.
    * ``tail``: the residual is sampled by a float32 inverse CDF (as ``flashinfer-sampling``).
    * ``batch_invariance``: FlashInfer draws one uniform per padded slot before the residual
      draw, so a request's recovered token moves when a batch-mate's draft count changes
      n (observed in its kernel source; its documentation keys the stream on the row
      alone). Fails from quick up (``must_fail``).

    Seen on an H200 at standard (docs/measurements/peers.md): ``batch_invariance`` fails as
    above, and ``acceptance_length`` fails as the first item says (1 of 4,774,536
    requests rejected a draft with p(d) >= q(d)); every other check passes there.
    """
    from flashinfer.sampling import chain_speculative_sampling

    key, requests = requests_of(num_draft_tokens)
    batch, width, device = requests.batch, requests.width, target_probs.device
    if width == 0:
        return bonus_token_ids.view(batch, 1).clone()
    first, counts = request_layout(key, requests, device)
    slot = torch.arange(width, device=device)
    real = slot < counts[:, None]                                      # [B, n]: not padding
    rows = torch.where(real, first[:, None] + slot, 0)                 # row in the flat layout
    drafts = torch.where(real, draft_token_ids[rows], 0)
    target = target_probs.new_zeros(batch, width + 1, target_probs.shape[1])
    target[:, :width] = target_probs[rows]
    target[:, :width].masked_fill_(~real[..., None], 0.0)
    target.select(1, width).scatter_(1, bonus_token_ids[:, None], 1.0)   # no host index
    if draft_probs is None:
        draft = target_probs.new_zeros(batch, width, target_probs.shape[1])
        draft.scatter_(2, drafts[..., None], real[..., None].to(draft.dtype))
    else:
        draft = draft_probs[rows].masked_fill_(~real[..., None], 0.0)
    out, _, emitted = chain_speculative_sampling(draft, drafts.int(), target,
                                                 deterministic=True, seed=int(seed), offset=0)
    best = target[:, :width].argmax(dim=-1)                            # greedy: per position
    greedy_accepted = ((best == drafts) & real).long().cumprod(dim=1).sum(dim=1)
    accepted = torch.where(greedy, greedy_accepted, emitted.long())
    recovered = torch.where(greedy, best.gather(1, accepted.clamp(max=width - 1)[:, None])[:, 0],
                            out.long().gather(1, accepted[:, None])[:, 0])
    token = torch.where(accepted == counts, bonus_token_ids, recovered)
    cols = torch.arange(width + 1, device=device)[None, :]
    prefix = torch.cat([drafts, drafts.new_zeros(batch, 1)], dim=1)
    return torch.where(cols < accepted[:, None], prefix,
                       torch.where(cols == accepted[:, None], token[:, None], -1))
