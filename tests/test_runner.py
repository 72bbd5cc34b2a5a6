"""The runner and the contract: every way a kernel call can go wrong is a KernelFailure."""

import time

import pytest
import torch

from sampling_harness.device import resolve_device
from sampling_harness.errors import KernelFailure
from sampling_harness.families.loader import Kernel
from sampling_harness.run.runner import POISONS, Runner, poison_allocator
from sampling_harness.seeds import derive_seed
from sampling_harness.suites.sample.contract import validate_ids

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


DEVICE = resolve_device("auto")


@pytest.mark.skipif(DEVICE.type != "cuda", reason="the CUDA caching allocator")
@pytest.mark.parametrize("nbytes", [160, 4096, 100_000, 3 << 20, 50 << 20])
def test_thorough_poison_reaches_both_cuda_pools(nbytes):
    """After a thorough poisoning, the next allocation of any size (small pool up to 1 MB,
    large pool above) holds nothing but the poison byte, even with live tensors around."""
    live = [torch.ones(size, dtype=torch.uint8, device=DEVICE) for size in (512, 70_000, 5 << 20)]
    scratch = [torch.zeros(size, dtype=torch.uint8, device=DEVICE) for size in (1000, 2 << 20)]
    del scratch  # freed blocks, not poisoned yet
    for byte in POISONS:
        poison_allocator(DEVICE, byte, nbytes, thorough=True)
        fresh = torch.empty(nbytes, dtype=torch.uint8, device=DEVICE)
        assert bool((fresh == byte).all()), (nbytes, byte)
        del fresh
    del live


@pytest.mark.parametrize("rows", [5, 300_000])
def test_call_twice_catches_an_unwritten_slot(rows):
    """A kernel that leaves one id unwritten fails call_twice, whatever the output's size
    (small outputs and large ones come from different allocator pools)."""
    def forgets_the_last_row(probs, seed):
        ids = torch.empty(probs.shape[0], dtype=torch.int64, device=probs.device)
        ids[:-1] = 0
        return ids
    probs = torch.zeros(rows, 2, device=DEVICE)
    probs[:, 0] = 1.0
    kernel = Runner(Kernel("k", "k", "sample", forgets_the_last_row), DEVICE, 30.0)
    with pytest.raises(KernelFailure, match="never wrote|under poison bytes"):
        kernel.call_twice({"probs": probs}, 0)


def test_call_twice_passes_a_deterministic_kernel():
    probs = torch.tensor([[0.25, 0.75], [1.0, 0.0]], device=DEVICE)
    kernel = Runner(Kernel("k", "k", "sample", lambda p, seed: p.argmax(dim=1)), DEVICE, 30.0)
    assert kernel.call_twice({"probs": probs}, 0).tolist() == [1, 0]


def test_a_hanging_validity_call_leaves_torch_settings_as_they_were():
    """The CPU fill of uninitialised memory is switched off again when a call hangs."""
    kernel = Runner(Kernel("k", "k", "sample", lambda probs, seed: time.sleep(30)),
                    torch.device("cpu"), 0.5)
    with pytest.raises(KernelFailure, match="did not return"):
        kernel.call_twice({"probs": PROBS}, 0)
    assert not torch.are_deterministic_algorithms_enabled()


@pytest.mark.parametrize("shared, failures, passes", [
    (True, 2, True),     # a shared GPU: out of memory twice, then room: retried, passes
    (True, 99, False),   # never any room: fails after the retries, with torch's message
    (False, 1, False),   # a GPU of its own: out of memory is the kernel's failure at once
])
def test_out_of_memory_is_retried_only_on_a_shared_gpu(monkeypatch, shared, failures, passes):
    import sampling_harness.run.runner as runner_module
    monkeypatch.setattr(runner_module, "SHARED_OOM_WAITS", (0.0,) * 3)
    calls = []

    def tight(probs, seed):
        calls.append(1)
        if len(calls) <= failures:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB")
        return probs.argmax(dim=1)

    run = Runner(Kernel("k", "k", "sample", tight), torch.device("cpu"), 5.0, shared_gpu=shared)
    if passes:
        assert run.call({"probs": PROBS}, 0).tolist() == [0, 2]
        assert run.oom_retries == 2 and not run.side_effects
    else:
        with pytest.raises(KernelFailure, match="OutOfMemoryError: CUDA out of memory"):
            run.call({"probs": PROBS}, 0)
        assert len(calls) == (4 if shared else 1)


def test_a_check_whose_harness_work_runs_out_of_a_shared_gpu_is_run_again(monkeypatch):
    """The harness's own out-of-memory on a shared GPU re-runs the check (seeded: the same
    verdict), says so, and gives up after CHECK_OOM_WAITS; on a GPU of its own, at once."""
    from types import SimpleNamespace

    import sampling_harness.run.check_context as check_context
    from sampling_harness.verdict import Outcome
    monkeypatch.setattr(check_context, "CHECK_OOM_WAITS", (0.0, 0.0))

    def failing(failures: int, attempts: list):
        def check_fn(ctx):
            attempts.append(1)
            if len(attempts) <= failures:
                raise torch.OutOfMemoryError("CUDA out of memory")
            return Outcome(True, "ok")
        return check_fn

    for shared, failures, runs in ((True, 1, 2), (True, 9, 3), (False, 1, 1)):
        attempts: list = []
        ctx = SimpleNamespace(runner=SimpleNamespace(shared_gpu=shared), check_retries=0)
        if failures < runs:
            assert check_context.CheckContext._attempts(ctx, failing(failures, attempts)).passed
            assert ctx.check_retries == failures
        else:
            with pytest.raises(torch.OutOfMemoryError):
                check_context.CheckContext._attempts(ctx, failing(failures, attempts))
        assert len(attempts) == runs
