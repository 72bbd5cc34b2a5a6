"""The interpreter's language patching done once per launch (harness/run/interpreter_calls.py)
changes no output: every project Triton kernel, on its family's first CPU bench shape, draws
the same under Triton's own patching at every helper call."""

import os
import subprocess
import sys

import torch

from sampling_harness.families import FAMILIES
from sampling_harness.families.registry import entries

TRITON_KERNELS = [(family, name) for family in FAMILIES if FAMILIES[family].bench is not None
                  for name, entry in entries(family).items()
                  if entry.role == "kernel" and name.startswith("triton-")]

DRAW = """
import sys, zlib, torch
from sampling_harness.device import use_triton_interpreter_without_gpu
use_triton_interpreter_without_gpu()       # as the harness's processes do
from triton.runtime import interpreter
mode = "once" if getattr(interpreter._patch_lang, "sampling_harness", False) else "every-call"
assert mode == sys.argv[1].rsplit("/", 1)[-1].removesuffix(".pt"), mode
from sampling_harness.families import FAMILIES
from sampling_harness.families.registry import load
path, *kernels = sys.argv[1:]
outputs = {}
for kernel in kernels:
    family, name = kernel.split(":")
    spec = FAMILIES[family].bench
    shape = spec.cpu_shapes[0]
    torch.manual_seed(zlib.crc32(shape.encode()))
    inputs = spec.make_inputs(shape, torch.device("cpu"))
    outputs[kernel] = FAMILIES[family].call(load(name, family).fn, inputs, 20261128)
torch.save(outputs, path)
"""


def test_the_project_triton_kernels_are_listed():
    assert len(TRITON_KERNELS) >= 6, TRITON_KERNELS


def test_installed_under_the_interpreter():
    from triton.runtime import interpreter

    assert os.environ.get("TRITON_INTERPRET") == "1"
    assert getattr(interpreter._patch_lang, "sampling_harness", False)


def test_the_outputs_equal_those_of_tritons_own_patching(tmp_path):
    outputs = []
    for mode in ("once", "every-call"):
        path = tmp_path / f"{mode}.pt"
        env = {**os.environ, "TRITON_INTERPRET": "1",
               "SAMPLING_HARNESS_INTERPRETER_PATCH": mode}
        subprocess.run([sys.executable, "-c", DRAW, str(path),
                        *(f"{family}:{name}" for family, name in TRITON_KERNELS)],
                       env=env, check=True, timeout=900)
        outputs.append(torch.load(path))
    assert outputs[0].keys() == outputs[1].keys()
    for kernel, once in outputs[0].items():
        every = outputs[1][kernel]
        assert type(once) is type(every), kernel
        if isinstance(once, torch.Tensor):
            assert torch.equal(once, every), kernel
        else:
            assert all(torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
                       for a, b in zip(once, every, strict=True)), kernel
