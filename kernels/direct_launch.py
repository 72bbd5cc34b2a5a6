"""Eager launches of a @triton.jit kernel without Triton's per-call dispatch.

``kernel[grid](*args, **kwargs)`` spends about 11-15 us of host time (an H100 with triton
3.6, benchmarks/host_cost.py) before the driver call: it binds the arguments, derives the
specialisation of each one, builds and looks up a cache key, then calls the compiled
kernel's launcher. ``launch(kernel, grid, *args, **kwargs)`` does the same launch: its
first call for a given specialisation is ``kernel[grid](...)``, which returns the
CompiledKernel, held under a key of everything Triton specialises on; a later call with an
equal key calls that kernel's launcher directly (6-7 us measured for the whole launch).

The key must be at least as fine as Triton's, or a kernel compiled for other alignments
runs silently. Triton 3.x (runtime/jit.py ``create_function_from_signature``, the
specialisation in ``native_specialize_impl``; read in 3.9, the launch path in 3.6 through
benchmarks/host_cost.py) specialises on, and the key holds:

- a tensor: its dtype and whether data_ptr() is a multiple of 16;
- an int: whether it is 1 (then a constexpr), whether it is a multiple of 16, and its
  type, i32 / i64 / u64 by range (a do_not_specialize int keeps the type: the key does
  not look at do_not_specialize, so it is finer than Triton's, never coarser);
- a bool (u1), a float (fp32), None: their type alone, as Triton;
- a constexpr (positional or keyword) and every keyword that is not a runtime parameter
  (num_warps, num_stages, ...): its type and value (True and 1 are different keys);
- the current device (Triton caches per device) and the knobs Triton folds into its
  options at each call (runtime.debug, compilation.instrumentation_mode, where present).

Anything else as an argument (a tuple, a dtype, a tensor descriptor, a numpy scalar, a
callable grid), a kernel that is not a JITFunction (the interpreter's InterpretedFunction
under TRITON_INTERPRET=1, a test's stand-in), pre-run hooks, a stages-inspection hook, or
a compiled kernel without the launcher attributes used below: ``kernel[grid](...)`` every
time. Version differences guarded against: the launcher's leading arguments (grid x, y,
z, stream, function, packed metadata, launch metadata, enter hook, exit hook, then every
kernel argument in signature order, constexprs included) are those of triton 3.4-3.9's
``JITFunction.run``; the hooks are read from ``knobs.runtime`` as ``run`` does
(``HookChain`` objects in 3.9, None or a callable before) and the launch metadata comes
from the compiled kernel's own ``launch_metadata``, so a profiler's hooks still see
every launch. Not checked on the direct path (Triton checks them per call): that a global
the kernel reads has changed since it compiled (Triton raises), and a changed
``triton.runtime.driver.active``. A CUDA graph capture needs nothing: the launcher is
called with the current (capturing) stream, as ``run`` calls it. Tensors go to the
launcher as tensors (it reads their pointers and checks they are device memory).
"""

from __future__ import annotations

import torch

# Off until the direct path is measured on a GPU (issue 38): every launch is ``kernel[grid]``
# unless a caller sets ``direct_launch.ENABLED = True`` (benchmarks/host_cost.py and
# benchmarks/bench_direct.py do).
ENABLED = False

_INT32 = range(-2**31, 2**31)
_INT64 = range(-2**63, 2**63)
_TENSOR = torch.Tensor
_SITES: dict[int, _Site] = {}    # id(kernel) -> its site; the site holds the kernel alive


class Unsupported(Exception):
    """An argument the key does not describe: the call takes ``kernel[grid]``."""


def int_key(value: int) -> tuple:
    """An int's specialisation: (is 1, multiple of 16, 0 i32 / 1 i64 / 2 u64 by range)."""
    return value == 1, not value & 15, 0 if value in _INT32 else 1 if value in _INT64 else 2


def value_key(value):
    """What Triton specialises on for a runtime (not constexpr) argument (module
    docstring); raises Unsupported for a kind it does not know."""
    kind = type(value)
    if kind is int:
        return int_key(value)
    if kind is bool or kind is float or value is None:
        return kind
    if isinstance(value, torch.Tensor):
        return value.dtype, not value.data_ptr() & 15
    raise Unsupported(kind.__name__)


def constant_key(value) -> tuple:
    """A constexpr or a launch option: its type and value (True and 1 differ)."""
    return type(value), value


def argument_key(args: tuple, kwargs: dict, constexpr: tuple[bool, ...],
                 runtime: frozenset) -> tuple:
    """The key of one call's arguments: positional ``args`` (``constexpr[i]``: parameter i
    is a constexpr) and ``kwargs`` (``runtime``: the names of the runtime parameters; any
    other keyword is a constexpr or a launch option, keyed by value). Raises Unsupported.
    The usual call (runtime positionals, constexprs and options as keywords) takes the
    inlined path: a few hundred ns an argument, most of it torch's dtype and data_ptr."""
    if len(args) > len(constexpr):
        raise Unsupported("more arguments than parameters")
    if True in constexpr[:len(args)]:
        positional = tuple([constant_key(v) if c else value_key(v)
                            for v, c in zip(args, constexpr, strict=False)])
    else:                                   # value_key inlined for tensors and ints
        positional = tuple([
            (v.dtype, not v.data_ptr() & 15) if type(v) is _TENSOR else
            (v == 1, not v & 15, 0 if v in _INT32 else 1 if v in _INT64 else 2)
            if type(v) is int else value_key(v) for v in args])
    if runtime.isdisjoint(kwargs):
        named = tuple(kwargs.items()), tuple(map(type, kwargs.values()))
    else:
        named = tuple([(name, value_key(v) if name in runtime else constant_key(v))
                       for name, v in kwargs.items()]), ()
    return positional, named


def driver_functions():
    """(current device, current stream of a device): what ``JITFunction.run`` asks Triton's
    active driver (torch's, under torch). Raises where no driver is active (no GPU)."""
    from triton.runtime import driver
    return driver.active.get_current_device, driver.active.get_current_stream


class _Site:
    """One JITFunction's held launches: key -> (compiled kernel, the arguments after the
    positional ones when the key fixes them, else None)."""

    def __init__(self, kernel):
        from triton import knobs

        self.kernel, self.knobs = kernel, knobs
        self.params = kernel.params
        self.constexpr = tuple(p.is_constexpr for p in self.params)
        self.runtime = frozenset(p.name for p in self.params if not p.is_constexpr)
        self.current_device, self.current_stream = driver_functions()
        self.held: dict = {}

    def options_key(self) -> tuple:
        """The knobs ``JITFunction.run`` folds into the options at each call."""
        return (getattr(self.knobs.runtime, "debug", None),
                getattr(self.knobs.compilation, "instrumentation_mode", None),
                getattr(self.knobs.compilation, "fpsan_homomorphic_casts", None))

    def tail(self, args: tuple, kwargs: dict):
        """The arguments after ``args`` in signature order (keywords, else defaults)."""
        return tuple(kwargs[p.name] if p.name in kwargs else p.default
                     for p in self.params[len(args):])

    def hold(self, key, compiled, args: tuple, kwargs: dict) -> None:
        """Keep ``compiled`` under ``key`` if it has the launcher attributes used here."""
        if not all(hasattr(compiled, a) for a in ("run", "function", "packed_metadata",
                                                  "launch_metadata")):
            return
        fixed = not any(p.name in kwargs and not p.is_constexpr
                        for p in self.params[len(args):])
        self.held[key] = compiled, self.tail(args, kwargs) if fixed else None

    def launch(self, compiled, tail, grid: tuple, args: tuple, kwargs: dict, device) -> None:
        """What ``JITFunction.run`` does once it has the compiled kernel."""
        values = args + (tail if tail is not None else self.tail(args, kwargs))
        stream = self.current_stream(device)
        size = len(grid)
        meta = compiled.launch_metadata(grid, stream, *values)
        runtime = self.knobs.runtime
        compiled.run(grid[0], grid[1] if size > 1 else 1, grid[2] if size > 2 else 1, stream,
                     compiled.function, compiled.packed_metadata, meta,
                     runtime.launch_enter_hook, runtime.launch_exit_hook, *values)


def _site(kernel) -> _Site | None:
    """The kernel's site, None where only ``kernel[grid]`` may launch it (module
    docstring)."""
    site = _SITES.get(id(kernel))
    if site is None:
        try:
            from triton.runtime.jit import JITFunction
        except ImportError:
            return None
        if type(kernel) is not JITFunction or not hasattr(kernel, "params"):
            return None
        try:
            site = _Site(kernel)
        except Exception:           # noqa: BLE001 - no active driver: Triton's path says why
            return None
        _SITES[id(kernel)] = site
    return site


def launch(kernel, grid: tuple, *args, **kwargs):
    """``kernel[grid](*args, **kwargs)``, through the held compiled kernel where the key
    of the call has been seen (module docstring). Returns what ``kernel[grid]`` returns on
    the first call of a key, the compiled kernel on a later one."""
    site = _site(kernel) if ENABLED else None
    if site is None or type(grid) is not tuple or getattr(kernel, "pre_run_hooks", None) \
            or getattr(site.knobs.runtime, "add_stages_inspection_hook", None) is not None:
        return kernel[grid](*args, **kwargs)
    try:
        device = site.current_device()
        key = device, site.options_key(), argument_key(args, kwargs, site.constexpr,
                                                       site.runtime)
        held = site.held.get(key)
    except (Unsupported, TypeError):        # TypeError: an unhashable constexpr
        return kernel[grid](*args, **kwargs)
    if held is None:
        compiled = kernel[grid](*args, **kwargs)
        site.hold(key, compiled, args, kwargs)
        return compiled
    site.launch(held[0], held[1], grid, args, kwargs, device)
    return held[0]


def forget() -> None:
    """Drop every held launch (tests; the next call of each key goes through Triton)."""
    _SITES.clear()
