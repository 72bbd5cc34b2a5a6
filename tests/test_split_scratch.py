"""The held scratch of the split kernels (kernels/split_scratch.py): what a CUDA graph
captured on it may rely on, checked on any device (the policy is host code)."""

import gc
import weakref

import torch

from sampling_harness.kernels import split_scratch as scratch


def test_growth_keeps_the_replaced_scratch_and_at_least_doubles():
    """A graph captured on the small scratch replays on it after a larger call: the larger
    call must not free it (its memory would go to other tensors), and repeated growth must
    double, so that what is kept stays within about twice the largest."""
    cpu = torch.device("cpu")
    name, before = "test-growth", len(scratch._RETIRED)
    small = scratch.split_scratch(name, cpu, 8, 1 << 16, (torch.float32,))
    alive = [weakref.ref(t) for t in small]
    del small
    grown = scratch.split_scratch(name, cpu, 8, (1 << 16) + 1, (torch.float32,))
    gc.collect()
    assert all(ref() is not None for ref in alive), "a replaced scratch was freed"
    assert grown[1].numel() >= 2 << 16 and grown[0].numel() >= 1024
    again = scratch.split_scratch(name, cpu, 8, (2 << 16) + 1, (torch.float32,))
    assert again[1].numel() >= 4 << 16
    assert scratch.split_scratch(name, cpu, 8, 10, (torch.float32,))[1] is again[1]
    kept = sum(t[1].numel() for t in scratch._RETIRED[before:])
    assert kept <= again[1].numel()              # 1 + 2 halvings below the held size


def test_a_call_within_the_held_size_reuses_it():
    """Calls no larger than the held scratch get the same buffers (nothing retired)."""
    cpu = torch.device("cpu")
    first = scratch.split_scratch("test-reuse", cpu, 4, 100, (torch.int64,))
    retired = len(scratch._RETIRED)
    second = scratch.split_scratch("test-reuse", cpu, 4, 99, (torch.int64,))
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert len(scratch._RETIRED) == retired

