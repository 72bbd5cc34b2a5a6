"""The runner and the contract: every way a kernel call can go wrong is a KernelFailure."""

import time

import pytest
import torch

from sampling_harness.device import resolve_device
from sampling_harness.errors import KernelFailure
from sampling_harness.families.registry import Kernel
from sampling_harness.run.runner import POISONS, OutOfMemoryFailure, Runner, poison_allocator
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


def test_a_kernel_out_of_memory_is_its_failure_with_the_bytes():
    def greedy(probs, seed):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB")

    run = Runner(Kernel("k", "k", "sample", greedy), torch.device("cpu"), 5.0)
    with pytest.raises(OutOfMemoryFailure, match="OutOfMemoryError: CUDA out of memory. "
                                                 "Tried to allocate 4.00 GiB"):
        run.call({"probs": PROBS}, 0)


class _Flaky(Exception):
    """Stands in for Hypothesis's FlakyFailure: an exception group around the real error."""

    def __init__(self, *inner):
        super().__init__("Hypothesis saw a flaky test")
        self.exceptions = inner


@pytest.mark.parametrize("raised, runs, retried, outcome", [
    ([torch.OutOfMemoryError("out of memory")], 2, 1, "pass"),          # harness work: alone
    ([OutOfMemoryFailure("raised OutOfMemoryError")], 2, 1, "pass"),    # a kernel call
    ([_Flaky(torch.OutOfMemoryError("out of memory"))], 2, 1, "pass"),  # inside Hypothesis
    ([torch.OutOfMemoryError("out of memory")] * 2, 2, 1, torch.OutOfMemoryError),  # alone too
    ([_Flaky(ValueError("the real error"))], 1, 0, ValueError),         # not memory: unwrapped
])
def test_a_check_out_of_memory_beside_others_runs_again_alone(monkeypatch, tmp_path, raised,
                                                              runs, retried, outcome):
    """GPU memory admission (scale/gpu_share.py): a check runs under its GPU's shared lock;
    out of memory there (its own work, a kernel call, or wrapped by Hypothesis), it runs
    once more under the exclusive lock; any other error, or out of memory alone, stands,
    unwrapped."""
    from types import SimpleNamespace

    import sampling_harness.run.check_context as check_context
    from sampling_harness.scale import gpu_share
    from sampling_harness.verdict import Outcome

    share = gpu_share.GpuShare("test-gpu", tmp_path)
    monkeypatch.setattr(gpu_share, "for_device", lambda device: share)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    attempts = []

    def check_fn(ctx):
        attempts.append(share.alone_runs)
        if len(attempts) <= len(raised):
            raise raised[len(attempts) - 1]
        return Outcome(True, "ok")

    restarts = []
    ctx = SimpleNamespace(device=torch.device("cuda"), shard=SimpleNamespace(world=1),
                          check_retries=0, runner=SimpleNamespace(
                              restart=lambda: restarts.append(1)))
    if outcome == "pass":
        assert check_context.CheckContext._attempts(ctx, check_fn).passed
    else:
        with pytest.raises(outcome):
            check_context.CheckContext._attempts(ctx, check_fn)
    assert len(attempts) == runs and ctx.check_retries == retried == len(restarts)
    assert attempts == [0, 1][:runs]          # the second run holds the GPU alone


def test_alone_waits_for_the_checks_beside_it_and_holds_new_ones_back(tmp_path):
    """Many checks share a GPU at once; an exclusive run starts when those running end, and
    a check that asks while it waits starts after it (no stream of checks starves it)."""
    import threading
    import time

    from sampling_harness.scale.gpu_share import GpuShare

    share = GpuShare("test-gpu", tmp_path)
    events, release = [], threading.Event()

    def beside(name, hold):
        with share.shared():
            events.append(f"{name} in")
            hold.wait(10)
            events.append(f"{name} out")

    def alone():
        with share.alone():
            events.append("alone in")
            events.append("alone out")

    first, second = (threading.Thread(target=beside, args=(n, release)) for n in "ab")
    first.start(), second.start()
    while events.count("a in") + events.count("b in") < 2:     # both beside each other
        time.sleep(0.01)
    waiting = threading.Thread(target=alone)
    waiting.start()
    time.sleep(0.2)
    done = threading.Event()
    done.set()
    late = threading.Thread(target=beside, args=("late", done))
    late.start()
    time.sleep(0.2)
    assert "alone in" not in events and "late in" not in events
    release.set()
    for thread in (first, second, waiting):
        thread.join(10)
    late.join(15)
    assert events.index("alone in") > max(events.index("a out"), events.index("b out"))
    assert events.index("late in") > events.index("alone out")
