"""The runner and the contract: every way a kernel call can go wrong is a KernelFailure."""

import time

import pytest
import torch

from harness.errors import KernelFailure
from harness.families.sample import validate_ids
from harness.loader import Kernel
from harness.runner import Runner, derive_seed

PROBS = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])


def runner(fn, timeout=5.0):
    return Runner(Kernel("k", "k", "sample", fn), torch.device("cpu"), timeout)


@pytest.mark.parametrize("ids,reason", [
    ([0, 2], "expected a torch.Tensor"),
    (torch.tensor([0.0, 2.0]), "dtype torch.float32"),
    (torch.tensor([[0], [2]]), "shape (2, 1)"),
    (torch.tensor([0, 3]), "outside [0, 3)"),
    (torch.tensor([-1, 2]), "outside [0, 3)"),
    (torch.tensor([2, 2]), "probability 0 at row 0"),
])
def test_validate_ids_rejects(ids, reason):
    with pytest.raises(KernelFailure, match=reason.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)")):
        validate_ids(ids, PROBS)


def test_validate_ids_accepts_int32():
    assert validate_ids(torch.tensor([1, 2], dtype=torch.int32), PROBS).dtype == torch.int64


def test_a_raising_kernel_fails_with_one_line():
    def boom(probs, seed):
        raise RuntimeError("line one\nline two")
    with pytest.raises(KernelFailure, match="raised RuntimeError: line one$"):
        runner(boom).call({"probs": PROBS}, 0)


def test_a_hanging_kernel_fails_after_the_timeout():
    started = time.perf_counter()
    with pytest.raises(KernelFailure, match="did not return within 0.5 s"):
        runner(lambda probs, seed: time.sleep(30), timeout=0.5).call({"probs": PROBS}, 0)
    assert time.perf_counter() - started < 5


def test_the_kernel_gets_a_fresh_copy_it_may_overwrite():
    probs = PROBS.clone()
    ids = runner(lambda p, seed: p.mul_(0).add_(torch.eye(3)[:2]).argmax(dim=-1)).call(
        {"probs": torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])}, 0)
    assert ids.tolist() == [0, 1] and torch.equal(probs, PROBS)


def test_derived_seeds_are_stable_31_bit():
    assert derive_seed(1, "sample", "fit") == derive_seed(1, "sample", "fit")
    assert derive_seed(1, "sample", "fit") != derive_seed(2, "sample", "fit")
    assert 0 <= derive_seed("x") < 2**31
