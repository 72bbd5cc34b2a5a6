"""Kernel families: each one a small description, and a registry that finds them by file.

A family is a contract (the one Python signature its kernels meet), how its output is
validated exactly, its budgets (the effects its checks must detect at each budget name), its
checks (``Check``: the one list the plugin, the self-test, the mutants' ``caught_by``,
``--sanitize`` and ``reproduce`` read) and how the benchmark builds its inputs. Everything
else (copying inputs, poisoning the allocator, the timeout, synchronisation, cost
accounting, seeds, reports) is shared.

Adding a family is adding a module ``harness/families/<name>.py`` that defines ``FAMILY``;
the runner, the plugin, the CLI, the benchmark and the self-test find it here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from sampling_harness.errors import HarnessError


@dataclass(frozen=True)
class BenchSpec:
    """How ``sampling-harness bench <family>`` times kernels of the family.

    ``make_inputs(shape, device)`` builds one set of contract inputs (without the seed) from
    a shape string such as ``256x151936``; ``floor_bytes(inputs)`` is the fewest bytes a
    kernel must move (the memory floor); ``baselines`` are the registered kernels every row
    is compared with.
    """

    gpu_shapes: tuple[str, ...]
    cpu_shapes: tuple[str, ...]
    shape_help: str
    make_inputs: Callable[[str, torch.device], dict]
    floor_bytes: Callable[[dict], int]
    baselines: tuple[str, ...]


@dataclass(frozen=True)
class Check:
    """One check of a family: the test function ``test_<name>(check)`` of the suite module
    ``suites/<family>/<file>``, declared here so that nothing has to find it by reading code.

    ``detects`` says in one line which bug class fails it. ``statistical``: it spends a share
    of the run's false-fail budget (its verdict states alpha, samples and the minimum
    detectable effect); otherwise it is exact and spends none. ``gpu``: it runs on a CUDA
    device only (skipped on a CPU run, still counted in the budget split). ``sanitize``: it
    is re-run under ``--sanitize`` (compute-sanitizer). ``many_shapes``: its batches bring
    many shapes and dtypes, so a compiled kernel (Triton) compiles a variant for each; with
    several workers such checks start first (the longest first: the run's wall time is not
    one late compile-bound check). The plugin marks each collected
    check from this declaration (a suite writes no ``statistical`` or ``gpu`` mark itself),
    and a check function that its family does not declare stops the run.
    """

    name: str
    file: str
    detects: str
    statistical: bool = False
    gpu: bool = False
    sanitize: bool = False
    many_shapes: bool = False

    @property
    def function(self) -> str:
        return f"test_{self.name}"


@dataclass(frozen=True)
class Family:
    name: str
    parameters: tuple[str, ...]                  # the contract's arguments in order
    doc: str                                     # the contract, one paragraph
    validate: Callable[[object, dict], object]   # exact check of one output against its inputs
    output_bytes: Callable[[dict], int]          # bytes of a plausible output (CPU poisoning)
    draws: Callable[[dict], int]                 # what one call costs, in noise draws
    budgets: Mapping[str, object]                # budget name -> the family's budget
    bench: BenchSpec | None = None
    writable: tuple[str, ...] = ()               # inputs the kernel may overwrite; the rest
                                                 # are read-only (checked after every call)
    options: tuple[str, ...] = ()                # keyword arguments added after the contract
                                                 # was first published (``accepts``)
    checks: tuple[Check, ...] = ()               # every check of its suite (``Check``)

    def __post_init__(self):
        names = [c.name for c in self.checks]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise HarnessError(f"family {self.name!r} declares check(s) {twice} twice")

    @property
    def suite(self) -> str:
        """The package of its checks under suites/ (a family name with ``-`` is a Python
        package name with ``_``)."""
        return self.name.replace("-", "_")

    @property
    def sanitize_checks(self) -> tuple[str, ...]:
        """The checks re-run under ``--sanitize``."""
        return tuple(c.name for c in self.checks if c.sanitize)

    def check(self, name: str) -> Check:
        """The declared check ``name``, or ``HarnessError`` naming the family's checks."""
        for declared in self.checks:
            if declared.name == name:
                return declared
        raise HarnessError(f"family {self.name!r} declares no check {name!r}; its checks: "
                           f"{', '.join(c.name for c in self.checks) or 'none'} "
                           f"(harness/families/{self.suite}.py)")

    @property
    def signature(self) -> str:
        return f"fn({', '.join(self.parameters)})"

    def call(self, fn: Callable, inputs: dict, seed):
        """Call ``fn`` positionally, in the contract's order; ``seed`` (an int, or per-request
        seeds: harness/seeds.py) goes where the contract has one (a family without
        randomness ignores it); the family's options go by keyword, and only where the
        inputs hold them."""
        return fn(*(seed if name == "seed" else inputs[name] for name in self.parameters),
                  **{name: inputs[name] for name in self.options if name in inputs})


def accepts(fn: Callable, option: str) -> bool:
    """Whether kernel ``fn`` takes the keyword argument ``option`` (by name or ``**kwargs``).

    A family's options are passed by name, and only in calls whose inputs hold them: a
    kernel written before an option existed keeps passing every check that does not use it,
    and the checks that do say they skipped it. A callable without a signature is assumed
    not to take it."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == option and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
               or p.kind is p.VAR_KEYWORD for p in parameters)


def _discover() -> dict[str, Family]:
    found: dict[str, Family] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name in ("registry", "loader"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        family = getattr(module, "FAMILY", None)
        if isinstance(family, Family):
            found[family.name] = family
    return dict(sorted(found.items(), key=lambda kv: (kv[0] != "sample", kv[0])))


FAMILIES: dict[str, Family] = _discover()
