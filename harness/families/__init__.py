"""Kernel families: what one is (``Family``, ``Check``, ``Mutant``) and where they are found.

A family is a contract (the one Python signature its kernels meet), how its output is
validated exactly, its budgets (the effects its checks must detect at each budget name), its
checks (each pointing at its function), its mutants with the checks that must catch them,
and how the benchmark builds its inputs. It is declared in one place, a ``FAMILY`` that an
entry point of group ``sampling_harness.families`` names (the project's own: suites/<name>/
__init__.py); the plugin, the self-test, ``list``, ``reproduce`` and the docs read that
declaration. Everything else (copying inputs, poisoning the allocator, the timeout,
synchronisation, cost accounting, seeds, reports) is shared. docs/how-to/add-a-family.md.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from sampling_harness.budgets import BUDGET_NAMES
from sampling_harness.errors import HarnessError
from sampling_harness.words import did_you_mean

if TYPE_CHECKING:     # light to import: the pytest plugin reads FAMILY_GROUP and declaring_files
    import torch


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
    """One check of a family: its name and its function ``function(ctx) -> Outcome`` (``ctx``
    a ``sampling_harness.run.check_context.CheckContext``).

    ``detects`` says in one line which bug class fails it. ``statistical``: it spends a share
    of the run's false-fail budget (its verdict states alpha, samples and the minimum
    detectable effect); otherwise it is exact and spends none. ``gpu``: it runs on a CUDA
    device only (skipped on a CPU run, still counted in the budget split). ``sanitize``: it
    is re-run under ``--sanitize`` (compute-sanitizer). ``many_shapes``: its batches bring
    many shapes and dtypes, so a compiled kernel (Triton) compiles a variant for each; with
    several workers such checks start first (the longest first: the run's wall time is not
    one late compile-bound check). The plugin makes one test item per check and kernel,
    named ``test_<name>[<kernel>]``, and hands this ``Check`` itself to the check's context;
    the item's marks, set from it, are for pytest's own selection (``-m``) alone.
    """

    name: str
    function: Callable
    detects: str
    statistical: bool = False
    gpu: bool = False
    sanitize: bool = False
    many_shapes: bool = False

    @property
    def test_name(self) -> str:
        """The name of its test items (``-k test_<name>`` selects it)."""
        return f"test_{self.name}"


@dataclass(frozen=True)
class Mutant:
    """A deliberately wrong kernel of a family, re-creating ``bug``: the checks ``caught_by``
    must fail on it at ``budget`` and above, on ``devices`` (on a GPU from ``gpu_budget``
    where set: a check that does more there, as the tail's 1e-8 scale). ``target`` is its
    ``package.module:attr``; ``tool`` names the compute-sanitizer tool that must catch it
    instead (a stray store), if any; ``call_timeout``, the seconds one call may take in the
    self-test (a mutant that hangs), None for the run's."""

    name: str
    target: str
    caught_by: tuple[str, ...]
    budget: str
    bug: str
    tool: str = ""
    devices: tuple[str, ...] = ("cpu", "cuda")
    call_timeout: float | None = None
    gpu_budget: str = ""

    @property
    def meta(self) -> dict:
        """Its metadata in the form of a kernel's ``sampling_harness`` attribute
        (kernels/meta.py): what the registry, the self-test and ``list`` read."""
        return {"role": "mutant", "caught_by": list(self.caught_by), "budget": self.budget,
                "bug": self.bug, "tool": self.tool, "devices": list(self.devices),
                "call_timeout": self.call_timeout, "gpu_budget": self.gpu_budget}


@dataclass(frozen=True)
class Peer:
    """Another project's kernel of the family, run as a baseline where that project is
    installed: ``target`` is the adapter (``package.module:attr``) that maps the family's
    contract onto the project's API and carries the baseline's metadata (kernels/meta.py);
    ``requires``, the project's import name: the peer is registered only while it imports
    (an absent one is never imported); ``install``, how to get it, one line; ``devices``,
    where it runs (``check`` and ``bench`` leave it out elsewhere)."""

    name: str
    target: str
    requires: str
    install: str
    devices: tuple[str, ...] = ("cpu", "cuda")


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
    checks: tuple[Check, ...] = ()               # every check of the family (``Check``)
    mutants: tuple[Mutant, ...] = ()             # its mutants, with the checks catching them
    peers: tuple[Peer, ...] = ()                 # other projects' kernels, as baselines
                                                 # where they import (``Peer``)

    def __post_init__(self):
        for what, names in (("check", [c.name for c in self.checks]),
                            ("mutant", [m.name for m in self.mutants]),
                            ("peer", [p.name for p in self.peers])):
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise HarnessError(f"family {self.name!r} declares {what}(s) {twice} twice")
        clash = sorted({m.name for m in self.mutants} & {p.name for p in self.peers})
        if clash:
            raise HarnessError(f"family {self.name!r} declares {clash} as mutant and as peer")
        checks = {c.name for c in self.checks}
        for mutant in self.mutants:
            unknown = sorted(set(mutant.caught_by) - checks)
            budgets = {mutant.budget, mutant.gpu_budget or mutant.budget}
            if unknown or not mutant.caught_by or not budgets <= set(BUDGET_NAMES):
                raise HarnessError(
                    f"mutant {mutant.name!r} of family {self.name!r} must be caught by checks "
                    f"the family declares (unknown: {unknown or 'none'}) at a budget in "
                    f"{BUDGET_NAMES} (got {mutant.budget!r}, on a GPU "
                    f"{mutant.gpu_budget or mutant.budget!r})")

    @property
    def suite(self) -> str:
        """The family's name as a Python identifier (``-`` is ``_``): its entry-point group
        suffix and its folder under suites/."""
        return self.name.replace("-", "_")

    def check(self, name: str) -> Check:
        """The declared check ``name``, or ``HarnessError`` naming the family's checks."""
        for declared in self.checks:
            if declared.name == name:
                return declared
        raise HarnessError(f"family {self.name!r} declares no check {name!r}"
                           f"{did_you_mean(name, (c.name for c in self.checks))} (its checks: "
                           f"{', '.join(c.name for c in self.checks) or 'none'})")

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


FAMILY_GROUP = "sampling_harness.families"


class Families(Mapping):
    """Every installed family by name, from the entry-point group ``sampling_harness.families``
    (``NAME = "package.module:FAMILY"``), loaded on first use: importing the harness loads no
    family, and an outside package adds one by naming it in its metadata. ``sample`` first,
    then by name."""

    def __init__(self, group: str = FAMILY_GROUP):
        self.group = group
        self._found: dict[str, Family] | None = None

    def _load(self) -> dict[str, Family]:
        if self._found is None:
            found: dict[str, Family] = {}
            for ep in entry_points(group=self.group):
                try:
                    family = ep.load()
                except Exception as exc:   # the declaring package's problem: one line
                    reason = str(exc).splitlines()[0] if str(exc) else ""
                    raise HarnessError(f"family {ep.name!r} ({ep.value}) cannot be loaded: "
                                       f"{type(exc).__name__}: {reason}") from None
                if not isinstance(family, Family) or family.name != ep.name:
                    raise HarnessError(f"entry point {ep.name!r} = {ep.value!r} of group "
                                       f"{self.group} must be a Family named {ep.name!r}")
                found[family.name] = family
            self._found = dict(sorted(found.items(), key=lambda kv: (kv[0] != "sample", kv[0])))
        return self._found

    def __getitem__(self, name: str) -> Family:
        return self._load()[name]

    def __iter__(self):
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


FAMILIES = Families()


def family_names(group: str = FAMILY_GROUP) -> list[str]:
    """The installed families' names, from the entry points alone (no family is loaded: a
    command's help and usage never fail on a family that cannot be imported), ``sample``
    first."""
    names = {ep.name for ep in entry_points(group=group)}
    return sorted(names, key=lambda name: (name != "sample", name))


def declaring_files(group: str = FAMILY_GROUP) -> dict[str, Path]:
    """Each installed family's name -> the file of the module that declares it, from the entry
    points, without importing a family (only the packages above each module): what a pytest
    run collects to make the family's test items (``sampling_harness.run.plugin``)."""
    found = {}
    for ep in entry_points(group=group):
        try:
            spec = importlib.util.find_spec(ep.module)
        except (ImportError, ValueError):
            spec = None             # the registry says why, once the family is asked for
        if spec is not None and spec.origin:
            found[ep.name] = Path(os.path.realpath(spec.origin))
    return found
