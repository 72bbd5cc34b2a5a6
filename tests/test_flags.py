"""Flags (harness/checks/flags.py): conditions read back at once, the first broken raised."""

import pytest
import torch

from sampling_harness.checks.flags import Flags
from sampling_harness.errors import KernelFailure


def test_the_first_condition_broken_is_raised_with_its_first_request_and_count():
    flags = Flags()
    flags.add(torch.tensor([False, False, False]), lambda b: "never")
    flags.add(torch.tensor([False, True, True]), lambda b: f"second broken at {b}")
    flags.add(torch.tensor([True, True, True]), lambda b: "third")
    with pytest.raises(KernelFailure, match=r"^request 1: second broken at 1 \(2 of 3 requests\)$"):
        flags.raise_first()


def test_questions_are_answered_by_index_and_never_raise():
    flags = Flags()
    yes = flags.any(torch.tensor([False, True]))
    flags.add(torch.tensor([False, False]), lambda b: "fine")
    no = flags.any(torch.tensor([False, False]))
    answers = flags.raise_first()
    assert answers[yes] and not answers[no]
    assert flags.raise_first() == []              # read once: the flags are cleared


def test_empty_batches_break_nothing():
    flags = Flags()
    flags.add(torch.zeros(0, dtype=torch.bool), lambda b: "no requests")
    assert flags.raise_first() == [False]
