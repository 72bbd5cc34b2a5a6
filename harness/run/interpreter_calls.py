"""Triton's interpreter (``TRITON_INTERPRET=1``), without its repeated language patching.

A launch under the interpreter patches ``triton.language`` for the launch's duration: each
builtin (``tl.load``, ``tl.where``, ...) is swapped for an interpreted one, and put back at
the end. Triton 3.x does that once per launch, and then again at every call of a
``@triton.jit`` helper inside the launch: each such call lists the members of tl, tl.core,
tl.math and tl.tensor (``inspect.getmembers``) and sets the same attributes once more, in a
scope that is never restored. The patches of the launch already hold, and the builtins it
swapped are no longer builtins, so the repeat changes nothing; but it costs about 0.5 ms a
call. Measured on this project's kernels (sample-logits at smoke, two-core CPU, 2026-11-28):
26 % of the interpreter's time.

``install()`` wraps the interpreter so that a helper call inside a launch patches only the
language modules the launch has not patched yet (none, in practice: every module is
``triton.language`` or ``triton.language.core``, whose attributes the launch set). Launches
themselves patch and restore exactly as before. What the kernels compute is unchanged: the
same interpreted builtins run either way (tests/test_interpreter_calls.py compares every
kernel's outputs with and without). Installed by ``use_triton_interpreter_without_gpu``
(harness/device.py) in the harness's processes and the tests'; a GPU run never installs it. Set
``SAMPLING_HARNESS_INTERPRETER_PATCH=every-call`` to keep Triton's own behaviour.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading

_launch = threading.local()    # .patched: the language modules the running launch patched


@functools.cache
def _languages(fn) -> frozenset[int]:
    """The ids of the language modules ``fn``'s globals hold (what Triton patches for it)."""
    import triton.language as tl

    return frozenset(id(value) for value in fn.__globals__.values()
                     if inspect.ismodule(value) and value in (tl, tl.core))


def install() -> bool:
    """Wrap the interpreter's patching (module docstring); False where it is not the
    interpreter this was written against, or the environment asks for Triton's own."""
    if os.environ.get("SAMPLING_HARNESS_INTERPRETER_PATCH") == "every-call":
        return False
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    patch, executor = getattr(interpreter, "_patch_lang", None), \
        getattr(interpreter, "GridExecutor", None)
    scope = getattr(interpreter, "_LangPatchScope", None)
    if patch is None or executor is None or scope is None or \
            getattr(patch, "sampling_harness", False):
        return False
    launch_call = executor.__call__

    def patch_once(fn):
        patched = getattr(_launch, "patched", None)
        languages = _languages(fn)
        if patched is not None and languages <= patched:
            return scope()                       # nothing to patch; restoring does nothing
        made = patch(fn)
        if patched is not None:
            patched |= languages
        return made

    def run_launch(self, *args, **kwargs):
        outer, _launch.patched = getattr(_launch, "patched", None), set()
        try:
            return launch_call(self, *args, **kwargs)
        finally:
            _launch.patched = outer

    patch_once.sampling_harness = True
    interpreter._patch_lang = patch_once
    executor.__call__ = run_launch
    return True
