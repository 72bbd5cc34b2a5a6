"""Guard bands: a write past either end of an input, or into a read-only input, fails the call
with a message that names the tensor, the side and the first offset touched."""

import pytest
import torch

from sampling_harness.errors import KernelFailure
from sampling_harness.families.registry import Kernel
from sampling_harness.run.guard import ALIGN, MAX_BAND, band_bytes, check_guards, guarded_copy
from sampling_harness.run.runner import Runner

PROBS = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])


def _past_end(tensor: torch.Tensor, offset: int) -> torch.Tensor:
    """A one-element view ``offset`` elements past the end (negative: before the start) of
    ``tensor``, inside its storage: what a kernel with a wrong mask writes to."""
    start = tensor.storage_offset() + (tensor.numel() + offset if offset >= 0 else offset)
    return torch.as_strided(tensor, (1,), (1,), start)


def test_bands_are_one_row_aligned_and_bounded():
    assert band_bytes(torch.empty(4, 3)) == ALIGN
    assert band_bytes(torch.empty(2, 1000)) == 4096
    assert band_bytes(torch.empty(1, 10**7)) == MAX_BAND
    assert band_bytes(torch.tensor(1.0)) == ALIGN


def test_the_kernel_sees_equal_contiguous_copies():
    inputs = {"probs": PROBS, "ids": torch.arange(5), "counts": [1, 2], "k": 3}
    fresh, guards = guarded_copy(inputs)
    assert torch.equal(fresh["probs"], PROBS) and fresh["probs"].is_contiguous()
    assert fresh["probs"].data_ptr() != PROBS.data_ptr()
    assert fresh["counts"] == [1, 2] and fresh["counts"] is not inputs["counts"]
    assert [g.name for g in guards] == ["probs", "ids"]
    check_guards(guards, fresh, inputs, writable=())


@pytest.mark.parametrize("offset,side,where", [
    (0, "after", "the first at byte 0 past its end"),
    (5, "after", "the first at byte 20 past its end"),
    (-1, "before", "the nearest 4 bytes before its start"),
])
def test_a_store_outside_names_tensor_side_and_offset(offset, side, where):
    inputs = {"probs": PROBS}
    fresh, guards = guarded_copy(inputs)
    _past_end(fresh["probs"], offset).fill_(0.25)
    with pytest.raises(KernelFailure, match=f"wrote outside input probs: 4 bytes of the guard "
                                            f"band {side} it changed, {where}"):
        check_guards(guards, fresh, inputs, writable=("probs",))


def test_a_changed_read_only_input_fails_and_a_writable_one_does_not():
    inputs = {"probs": PROBS, "ids": torch.tensor([[3, 4], [5, 6]])}
    fresh, guards = guarded_copy(inputs)
    fresh["probs"].mul_(2)
    fresh["ids"][1, 0] = 7
    with pytest.raises(KernelFailure, match=r"changed read-only input ids: 1 of 4 values "
                                            r"differ, the first at \(1, 0\): 5 became 7"):
        check_guards(guards, fresh, inputs, writable=("probs",))
    fresh["ids"][1, 0] = 5
    check_guards(guards, fresh, inputs, writable=("probs",))


def test_a_changed_read_only_list_fails():
    inputs = {"tokens": [[1, 2], [3]]}
    fresh, guards = guarded_copy(inputs)
    fresh["tokens"][1].append(9)
    with pytest.raises(KernelFailure, match="changed read-only input tokens"):
        check_guards(guards, fresh, inputs, writable=())


def test_the_runner_fails_a_kernel_that_writes_past_probs():
    def off_by_one(probs, seed):
        _past_end(probs, 0).fill_(1.0)
        return probs.argmax(dim=-1)
    runner = Runner(Kernel("k", "k", "sample", off_by_one), torch.device("cpu"), 5.0)
    with pytest.raises(KernelFailure, match="wrote outside input probs"):
        runner.call({"probs": PROBS}, 0)
    assert runner.guard_seconds > 0


def test_the_runner_fails_a_kernel_that_writes_a_read_only_input():
    def scales_target(draft_token_ids, num_draft_tokens, draft_probs, target_probs,
                      bonus_token_ids, greedy, seed):
        target_probs.mul_(1.0)       # bit-identical: not a change
        target_probs[0, 0] += 1.0
        return torch.tensor([[0, 1]])
    runner = Runner(Kernel("k", "k", "rejection", scales_target), torch.device("cpu"), 5.0)
    inputs = {"draft_token_ids": torch.tensor([0]), "num_draft_tokens": [1],
              "draft_probs": None, "target_probs": torch.tensor([[0.5, 0.5]]),
              "bonus_token_ids": torch.tensor([1]), "greedy": torch.tensor([False])}
    with pytest.raises(KernelFailure, match="changed read-only input target_probs: 1 of 2 "):
        runner.call(inputs, 0)


def test_fresh_lists_are_copies_down_to_their_immutable_items():
    """A kernel that edits its list inputs, flat or nested, never reaches the caller's."""
    inputs = {"counts": [1, 2, 3], "token_ids": [[0, 1], [2]]}
    fresh, _ = guarded_copy(inputs)
    fresh["counts"][0] = 9
    fresh["token_ids"][1].append(7)
    assert inputs == {"counts": [1, 2, 3], "token_ids": [[0, 1], [2]]}


def test_a_long_lists_type_scan_is_held_only_while_the_list_is_unchanged():
    from sampling_harness.run.guard import fresh_list

    counts = [1] * 2**16
    copied = fresh_list(counts)
    assert copied == counts and copied is not counts
    assert fresh_list(counts) == counts                    # held: the scan not repeated
    counts[7] = [3]                                        # the same list, now nested
    nested = fresh_list(counts)
    nested[7].append(4)                                    # deep-copied: the original intact
    assert counts[7] == [3]
