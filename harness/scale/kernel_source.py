"""What a Triton kernel's cache key is made of, readable without a GPU: its source.

Triton files a compiled variant under a key computed from the kernel's source text, the line
it starts on, the source of every ``@triton.jit`` function it calls (and theirs), the
values of the constexpr globals they read, then the compiler and the variant's options. The
precompile list (harness/scale/precompile.py) records keys computed on a GPU machine; they
go stale when any of that source moves, a docstring line above a kernel included, and the
GPU runs then compile at check time (a cold ``check all --budget quick`` went from 61 to
108 s on an H200 for one added docstring line). The key itself needs the GPU machine's
Triton, but its source part does not: ``fingerprint`` hashes it the same way on any machine
and any Triton version, so a CPU test can tell that the list was recorded from other source.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect


def _function(obj):
    """The Python function of a ``@triton.jit`` object (a JITFunction, or an interpreted
    one under ``TRITON_INTERPRET=1``), else None."""
    if type(obj).__name__ in ("JITFunction", "InterpretedFunction"):
        return getattr(obj, "fn", None)
    return None


def _constexpr_value(obj) -> str | None:
    """repr of a ``tl.constexpr`` global's value (what Triton folds into the key), else None."""
    return repr(obj.value) if type(obj).__name__ == "constexpr" else None


def closure(fn) -> list:
    """The Python functions of ``fn`` (a ``@triton.jit`` object) and of every jit function
    it reaches through the global names it reads, in (module, name) order."""
    seen: dict[tuple[str, str], object] = {}
    todo = [_function(fn)]
    while todo:
        f = todo.pop()
        if f is None or (f.__module__, f.__qualname__) in seen:
            continue
        seen[(f.__module__, f.__qualname__)] = f
        todo += [g for g in (_function(f.__globals__.get(n)) for n in f.__code__.co_names)
                 if g is not None]
    return [seen[name] for name in sorted(seen)]


def fingerprint(kernel: str) -> str:
    """sha256 of the source part of a kernel's cache key (module docstring): for every
    function of its ``closure``, its module, name, first line, source, and the constexpr
    globals it reads with their values. ``kernel``: "module:qualname"."""
    module, _, name = kernel.partition(":")
    parts = []
    for f in closure(getattr(importlib.import_module(module), name)):
        constants = sorted((n, v) for n, v in ((n, _constexpr_value(f.__globals__.get(n)))
                                               for n in f.__code__.co_names) if v is not None)
        parts.append(repr((f.__module__, f.__qualname__, f.__code__.co_firstlineno,
                           inspect.getsource(f), constants)))
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()
