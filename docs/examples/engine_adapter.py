"""Adapting an engine-style rejection sampler to the harness's ``rejection`` contract.

Engines call their sampler with target *logits*, a cumulative draft-count array
(``cu_num_draft_tokens``: [B], the end offset of each request's drafts) and a generator.
The harness calls ``fn(draft_token_ids, num_draft_tokens, draft_probs, target_probs,
bonus_token_ids, greedy, seed)``. The adapter below translates one call into the other:

    sampling-harness check rejection --kernel docs/examples/engine_adapter.py:adapted

``engine_rejection_sample`` stands in for your engine's function (here it computes its
target probs by a float32 softmax and hands them to the project's torch kernel).
"""

import itertools

import torch

from sampling_harness.kernels.rejection.torch_rejection import rejection_torch


def engine_rejection_sample(target_logits, cu_num_draft_tokens, draft_token_ids, draft_probs,
                            bonus_token_ids, is_greedy, generator):
    """An engine's signature: logits [T, V], cumulative counts [B], a torch.Generator."""
    counts = torch.diff(cu_num_draft_tokens, prepend=cu_num_draft_tokens.new_zeros(1))
    target_probs = torch.softmax(target_logits.float(), dim=-1)
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator,
                             device=generator.device))
    return rejection_torch(draft_token_ids, counts.tolist(), draft_probs, target_probs,
                           bonus_token_ids, is_greedy, seed)


def adapted(draft_token_ids, num_draft_tokens, draft_probs, target_probs, bonus_token_ids,
            greedy, seed):
    """The contract's signature, calling the engine's."""
    device = target_probs.device
    cu = torch.tensor(list(itertools.accumulate(num_draft_tokens)), dtype=torch.int64,
                      device=device)
    generator = torch.Generator(device=device).manual_seed(seed)
    return engine_rejection_sample(target_probs.log(), cu, draft_token_ids, draft_probs,
                                   bonus_token_ids, greedy, generator)
