"""torch-proposer: the runner's proposer step of speculative decoding, in plain torch.

After a step's tokens are appended, the drafter proposes the drafts the next step will
verify: for each running request that has room, ``num_spec_tokens`` drafts drawn one after
another from the draft model (each from softmax of the draft logits of the sequence so far,
by an exponential race against float64 noise from a generator seeded by ``seed``), and the
law each draft was drawn from, cached for the rejection sampler.

Room: a step that verifies k drafts may emit k + 1 tokens, so a request of length L drafts
only if L + lookahead + k + 1 <= max_model_len (lookahead: tokens a step still in flight may
add, 0 under synchronous scheduling); otherwise it gets no drafts, and its previous drafts
are dropped. Contract: suites/spec_decode/contract.py.

Memory traffic: per draft position one gathered [R, V] row of the draft table, its softmax
and R x V float64 noise.
"""

from __future__ import annotations

import torch

from sampling_harness.kernels.sample.torch_race import seeded_generator


def table_rows(sequences: list[list[int]], context: int, vocab: int) -> list[int]:
    """The draft table's row for the context ending each sequence (left-padded with 0)."""
    rows = []
    for seq in sequences:
        last = ([0] * context + list(seq))[-context:] if context else []
        index = 0
        for t in last:
            index = index * vocab + int(t)
        rows.append(index)
    return rows


def has_room(length: int, lookahead: int, num_spec_tokens: int, max_model_len: int) -> bool:
    return length + lookahead + num_spec_tokens + 1 <= max_model_len


def draw_drafts(draft_table: torch.Tensor, context: int, sequences: list[list[int]],
                num_spec_tokens: int, seed: int, noise_dtype: torch.dtype = torch.float64,
                drawn_from=None) -> tuple[list[list[int]], torch.Tensor]:
    """k drafts for every sequence and their laws: (drafts, float32 [R, k, V]), each drawn
    by the race argmax q / e against Exp(1) noise e in ``noise_dtype``; ``drawn_from(q)``,
    where given, is the law the race runs on instead of q (the laws returned stay q)."""
    vocab = draft_table.shape[1]
    generator = seeded_generator(draft_table.device, seed)
    grown = [list(s) for s in sequences]
    laws = []
    for _ in range(num_spec_tokens):
        rows = torch.tensor(table_rows(grown, context, vocab), device=draft_table.device)
        q = draft_table[rows].softmax(dim=1)
        noise = torch.empty(q.shape, dtype=noise_dtype, device=q.device)
        noise.exponential_(generator=generator)
        raced = q if drawn_from is None else drawn_from(q)
        for seq, token in zip(grown, (raced.to(noise_dtype) / noise).argmax(dim=1).tolist(),
                              strict=True):
            seq.append(token)
        laws.append(q)
    probs = torch.stack(laws, dim=1) if laws else draft_table.new_zeros((len(sequences), 0,
                                                                         vocab))
    return [g[len(s):] for g, s in zip(grown, sequences, strict=True)], probs


def propose(draft_table: torch.Tensor, context: int, token_ids: list[list[int]],
            previous_drafts: list[list[int]], num_spec_tokens: int, max_model_len: int,
            lookahead: int, seed: int) -> tuple[list[list[int]], torch.Tensor]:
    """Family ``spec-decode``: (drafts per request, float32 [R, K, V] draft laws; zero rows
    where a request has no drafts)."""
    drafts, probs = draw_drafts(draft_table, context, token_ids, num_spec_tokens, seed)
    for r, seq in enumerate(token_ids):
        if not has_room(len(seq), lookahead, num_spec_tokens, max_model_len):
            drafts[r] = []
            probs[r] = 0.0
    return drafts, probs
