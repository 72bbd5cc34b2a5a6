"""The direct launcher (kernels/direct_launch.py): its key tells apart every argument
property Triton specialises on and nothing Triton does not (so a held kernel is reused only
where Triton would reuse it), a held kernel's launcher gets what ``JITFunction.run`` gives
it, and every case it does not cover (the interpreter, a stand-in, an unknown argument)
goes through ``kernel[grid]`` with unchanged outputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.jit import JITFunction

from sampling_harness.kernels import direct_launch as dl

CONSTEXPR = (False, False, False, False, False, True)
RUNTIME = frozenset({"x", "n", "m", "scale", "flag"})


def _add_kernel(x, out, n, BLOCK: tl.constexpr):
    """out[i] = x[i] + 1 for i < n: one block a program."""
    at = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + at, tl.load(x + at, mask=at < n) + 1.0, mask=at < n)


add_kernel = triton.jit(_add_kernel)


def key(*args, **kwargs):
    return dl.argument_key(args, kwargs, CONSTEXPR, RUNTIME)


def base(**change):
    """Positional (x, n, m, scale, flag) and a keyword constexpr and option."""
    values = dict(x=torch.zeros(64), n=32, m=7, scale=0.5, flag=True)
    values.update(change)
    return values


def test_key_differs_for_every_property_triton_specialises_on():
    """dtype, a pointer's alignment to 16 bytes, an int that is 1, a multiple of 16, or
    outside i32 / i64, a bool against an int, a constexpr's value and type, an option."""
    def with_(**change):
        v = base(**change)
        return key(v["x"], v["n"], v["m"], v["scale"], v["flag"], BLOCK=128, num_warps=4)

    reference = with_()
    variants = {
        "dtype": with_(x=torch.zeros(64, dtype=torch.float16)),
        "misaligned pointer": with_(x=torch.zeros(65)[1:]),
        "int is 1": with_(m=1),
        "int multiple of 16": with_(m=48),
        "int not a multiple of 16": with_(n=33),
        "int beyond i32": with_(m=2**31 + 7),
        "int beyond i64 (u64)": with_(m=2**63 + 7),
        "negative beyond i32": with_(m=-2**31 - 1),
        "bool for an int": with_(m=True),
        "float for an int": with_(m=7.0),
        "None": with_(m=None),
    }
    for name, got in variants.items():
        assert got != reference, name
    assert key(*base().values(), BLOCK=256, num_warps=4) != reference
    assert key(*base().values(), BLOCK=128, num_warps=8) != reference
    assert key(*base().values(), BLOCK=128, num_warps=4, num_stages=2) != reference
    assert key(*base().values(), BLOCK=True) != key(*base().values(), BLOCK=1)
    beyond = [with_(m=v) for v in (2**31 + 7, 2**63 + 7)]
    assert beyond[0] != beyond[1]


def test_key_is_equal_where_triton_compiles_the_same_kernel():
    """Other tensors of the same dtype and alignment, other ints of the same class, other
    floats and bools, a runtime argument passed by keyword: one key (the held kernel is
    reused); a constexpr passed positionally is keyed by its value."""
    a = key(torch.zeros(64), 32, 7, 0.5, True, BLOCK=128)
    b = key(torch.ones(128)[16:], 64, 9, 2.5, False, BLOCK=128)
    assert a == b
    assert key(torch.zeros(8), n=32) == key(torch.ones(8), n=48) != key(torch.ones(8), n=1)
    positional = (torch.zeros(8), 32, 7, 0.5, True)
    assert key(*positional, 128) == key(*positional, 128) != key(*positional, 256)


@pytest.mark.parametrize("value", [(1, 2), np.int64(3), torch.float32, [1]])
def test_an_argument_the_key_does_not_describe_is_refused(value):
    with pytest.raises(dl.Unsupported):
        key(torch.zeros(4), value)


def test_the_interpreter_and_a_stand_in_go_through_kernel_grid():
    """Under TRITON_INTERPRET=1 (the CPU suite) the kernel is interpreted: ``launch`` holds
    nothing and the output is ``kernel[grid]``'s; a stand-in object is called as
    ``kernel[grid](...)``."""
    if isinstance(add_kernel, JITFunction):
        pytest.skip("compiled Triton (a GPU run): the next test covers the direct path")
    dl.forget()
    x = torch.arange(100, dtype=torch.float32)
    want, got = torch.empty(100), torch.empty(100)
    add_kernel[(4,)](x, want, 100, BLOCK=32)
    dl.launch(add_kernel, (4,), x, got, 100, BLOCK=32)
    assert torch.equal(got, x + 1) and torch.equal(got, want)
    assert dl._SITES == {}
    seen = []

    class StandIn:
        def __getitem__(self, grid):
            return lambda *args, **kwargs: seen.append((grid, args, kwargs))

    dl.launch(StandIn(), (2, 3), 1, 2, BLOCK=4)
    assert seen == [((2, 3), (1, 2), {"BLOCK": 4})]


class FakeCompiled:
    """Stands in for a CompiledKernel: records its launcher's calls."""

    function, packed_metadata = "function", "packed"

    def __init__(self):
        self.calls = []

    def launch_metadata(self, grid, stream, *args):
        return ("meta", grid, stream)

    def run(self, *args):
        self.calls.append(args)


def test_a_held_kernel_is_launched_as_jit_run_launches_it(monkeypatch):
    """A compiled JITFunction whose Triton path is faked: the first call of a key goes
    through ``kernel[grid]`` and its result is held; the next call with an equal key calls
    that kernel's launcher with (grid x, y, z, stream, function, metadata, launch
    metadata, hooks, every argument in signature order, constexprs included); a call that
    differs in a specialising property goes through ``kernel[grid]`` again."""
    from triton import knobs

    kernel = JITFunction(_add_kernel)
    compiled, triton_calls = [], []

    def run(*args, grid, warmup, **kwargs):
        triton_calls.append((grid, args, kwargs))
        compiled.append(FakeCompiled())
        return compiled[-1]

    monkeypatch.setattr(kernel, "run", run)
    monkeypatch.setattr(dl, "ENABLED", True)
    monkeypatch.setattr(dl, "driver_functions", lambda: (lambda: 0, lambda device: 77))
    dl.forget()
    x, out = torch.zeros(64), torch.zeros(64)
    assert dl.launch(kernel, (2,), x, out, 64, BLOCK=32, num_warps=2) is compiled[0]
    assert len(triton_calls) == 1 and compiled[0].calls == []
    dl.launch(kernel, (3, 2), torch.ones(64), out, 48, BLOCK=32, num_warps=2)
    assert len(triton_calls) == 1
    ((*lead, x2, out2, n, block),) = compiled[0].calls
    assert lead == [3, 2, 1, 77, "function", "packed", ("meta", (3, 2), 77),
                    knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook]
    assert torch.equal(x2, torch.ones(64)) and out2 is out and (n, block) == (48, 32)
    for args, kwargs in (((torch.zeros(65)[1:], out, 64), dict(BLOCK=32, num_warps=2)),
                         ((x, out, 1), dict(BLOCK=32, num_warps=2)),
                         ((x, out, 64), dict(BLOCK=64, num_warps=2)),
                         ((x, out, 64), dict(BLOCK=32, num_warps=4))):
        before = len(triton_calls)
        dl.launch(kernel, (2,), *args, **kwargs)
        assert len(triton_calls) == before + 1, (args, kwargs)
    dl.launch(kernel, (2,), x, out, (1, 2), BLOCK=32)        # not described: Triton's path
    kernel.pre_run_hooks.append(lambda *a, **k: None)         # a pre-run hook: Triton's path
    before = len(triton_calls)
    dl.launch(kernel, (3, 2), torch.ones(64), out, 48, BLOCK=32, num_warps=2)
    assert len(triton_calls) == before + 1
    dl.forget()
