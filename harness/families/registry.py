"""The kernels of a family, by name: those registered by entry points (one group per family,
``sampling_harness.kernels.<family>``; a group name has no hyphens: family ``sample-logits``
is group ``sampling_harness.kernels.sample_logits``), the mutants the family declares
(``Family.mutants``) and its peers (``Family.peers``: other projects' kernels, registered
only while the project they need imports; one that is not installed is never imported).

Any installed package registers a kernel by naming it in its metadata::

    [project.entry-points."sampling_harness.kernels.sample"]
    my-race = "mypkg.race:sample"

The harness reaches kernels by these names only; it never imports a kernel package until a
kernel is asked for. A registered kernel's role (kernel under test, baseline, mutant) and
its expectations are the ``sampling_harness`` attribute of the loaded callable
(``kernels/meta.py`` documents the dict); without one it is a kernel that must pass. A
declared mutant's metadata is its declaration.

Also the loader: a TARGET string (a registered name, ``pkg.module:attr`` or
``path/to/file.py:attr``) turned into a ``Kernel`` checked against its family's contract
(``load``). Every failure is a ``HarnessError`` with a one-line reason.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path

from sampling_harness.budgets import BUDGET_NAMES
from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES, Peer
from sampling_harness.words import did_you_mean

KERNEL_GROUP_PREFIX = "sampling_harness.kernels."
ROLES = ("kernel", "baseline", "mutant")


@dataclass(frozen=True)
class Entry:
    """One registered kernel: its name, family, ``module:attr`` and the package naming it."""

    name: str
    family: str
    target: str
    package: str
    declared: dict | None = None    # a mutant the family declares: its metadata (``Mutant``)
    peer: Peer | None = None        # a peer the family declares (``Peer``)

    def load(self):
        return _load(self.target)

    @property
    def meta(self) -> dict:
        meta = role_of(self.load(), self.name, self.family)
        return meta if self.declared is None else {**meta, **self.declared}

    @property
    def role(self) -> str:
        return self.meta["role"]


@dataclass(frozen=True)
class Expectation:
    """What a check of a kernel is expected to conclude: "pass", "fail" or "either"."""

    verdict: str = "pass"
    why: str = ""


@cache
def _load(target: str):
    module, _, attr = target.partition(":")
    try:
        value = importlib.import_module(module)
        for part in attr.split("."):
            value = getattr(value, part)
    except Exception as exc:  # the registering package's problem: name it in one line
        reason = str(exc).splitlines()[0] if str(exc) else ""
        raise HarnessError(f"registered kernel {target!r} cannot be loaded: "
                           f"{type(exc).__name__}: {reason}") from None
    return value


def group(family: str) -> str:
    """The entry-point group of ``family`` (group names allow no hyphens)."""
    return KERNEL_GROUP_PREFIX + family.replace("-", "_")


def _package(ep) -> str:
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else "?"


def _declared(family: str) -> list[Entry]:
    """The mutants ``family`` declares (``Family.mutants``), as entries."""
    if family not in FAMILIES:
        return []
    return [Entry(m.name, family, m.target, f"family {family}", m.meta)
            for m in FAMILIES[family].mutants]


_UNIMPORTABLE: dict[str, str] = {}     # module -> why its import failed (tried once)


def unavailable(module: str) -> str | None:
    """None when ``module`` imports, else why not, in one line. One that is not installed is
    never imported (``find_spec`` alone: a run without it pays nothing); one that raises on
    import is tried once per process."""
    if sys.modules.get(module) is not None:
        return None
    if module in _UNIMPORTABLE:
        return _UNIMPORTABLE[module]
    try:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - a broken install: said in one line, not raised
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        _UNIMPORTABLE[module] = f"import {module} fails: {type(exc).__name__}: {reason}"[:300]
        return _UNIMPORTABLE[module]
    return None


def _peers(family: str) -> list[Entry]:
    """The peers ``family`` declares whose project imports, as entries."""
    if family not in FAMILIES:
        return []
    return [Entry(p.name, family, p.target, f"family {family}, with {p.requires}", peer=p)
            for p in FAMILIES[family].peers if unavailable(p.requires) is None]


def missing_peers(families) -> list[tuple[str, Peer, str]]:
    """(family, peer, why) of each peer of ``families`` left unregistered: its project does
    not import."""
    return [(family, peer, why) for family in families if family in FAMILIES
            for peer in FAMILIES[family].peers
            for why in [unavailable(peer.requires)] if why is not None]


def entries(family: str) -> dict[str, Entry]:
    """Every kernel registered for ``family`` (entry points), every mutant it declares and
    every peer of it whose project imports, by name (two packages naming one kernel the same
    is an error that names both)."""
    found: dict[str, Entry] = {}
    registered = [Entry(ep.name, family, ep.value, _package(ep))
                  for ep in entry_points(group=group(family))]
    for entry in registered + _declared(family) + _peers(family):
        other = found.get(entry.name)
        if other is not None and other.target != entry.target:
            raise HarnessError(f"kernel name {entry.name!r} of family {family!r} is registered "
                               f"twice: {other.target} ({other.package}) and {entry.target} "
                               f"({entry.package})")
        found[entry.name] = entry
    return found


def _undeclared(family: str, label: str, named) -> None:
    """``HarnessError`` if ``named`` holds a check that ``family`` does not declare."""
    declared = {c.name for c in FAMILIES[family].checks} if family in FAMILIES else None
    unknown = sorted(set(named) - declared) if declared is not None else []
    if unknown:
        raise HarnessError(f"kernel {label!r} of family {family!r} names check(s) {unknown} "
                           f"that the family does not declare; its checks: "
                           f"{', '.join(c.name for c in FAMILIES[family].checks)}")


def role_of(fn, name: str = "", family: str | None = None) -> dict:
    """The validated ``sampling_harness`` metadata of a callable ({"role": "kernel"} if none).
    With ``family``, every check the metadata names (a mutant's ``caught_by``, a baseline's
    ``must_fail`` and ``may_fail``) must be one that family declares."""
    meta = getattr(fn, "sampling_harness", None)
    if meta is None:
        return {"role": "kernel"}
    label = name or getattr(fn, "__name__", repr(fn))
    if not isinstance(meta, dict) or meta.get("role") not in ROLES:
        raise HarnessError(f"kernel {label!r}: its sampling_harness attribute must be a dict "
                           f"with role in {ROLES}, got {meta!r:.80}")
    if meta.get("seeds", "per-call") not in ("per-call", "per-request"):
        raise HarnessError(f"kernel {label!r}: seeds must be 'per-call' or 'per-request', "
                           f"got {meta['seeds']!r:.40}")
    if meta["role"] == "mutant":
        if not meta.get("caught_by") or meta.get("budget") not in BUDGET_NAMES:
            raise HarnessError(f"mutant {label!r} must name the checks that catch it "
                               f"(caught_by) and a budget in {BUDGET_NAMES}")
        if family is not None:
            _undeclared(family, label, meta["caught_by"])
    if meta["role"] == "baseline":
        for by_budget in meta.get("must_fail", {}).values():
            unknown = set(by_budget) - set(BUDGET_NAMES)
            if unknown:
                raise HarnessError(f"baseline {label!r}: unknown budget(s) {sorted(unknown)} "
                                   f"in must_fail")
        if family is not None:
            _undeclared(family, label, [check for by in meta.get("must_fail", {}).values()
                                        for checks in by.values() for check in checks] +
                        [check for checks in meta.get("may_fail", {}).values()
                         for check in checks])
    return meta


def by_role(family: str, role: str) -> dict[str, Entry]:
    """The registered kernels of ``family`` with ``role`` (loads them to read their role)."""
    return {name: e for name, e in entries(family).items() if e.role == role}


def default_kernels(family: str, device: str | None = None) -> list[str]:
    """What a run checks when no kernel is named: the kernels under test and the baselines
    (on ``device``, "cpu" | "cuda", only the peers that run there)."""
    return [name for name, e in entries(family).items() if e.role in ("kernel", "baseline")
            and (device is None or e.peer is None or device in e.peer.devices)]


def expectation(meta: dict, check: str, device: str, budget: str) -> Expectation:
    """The expected verdict of ``check`` for a kernel with metadata ``meta`` (``role_of``)
    on ``device`` ("cpu" | "cuda") at ``budget``.

    Kernels and mutants must pass (a run gates on them as on any kernel: a mutant's run
    fails, which is the point; the self-test and ``calibrate`` read its ``caught_by``). A
    baseline must fail its ``must_fail`` checks on that device from the stated budget up,
    may fail its ``may_fail`` ones, and must pass the rest.
    """
    rank = BUDGET_NAMES.index(budget) if budget in BUDGET_NAMES else -1
    if meta["role"] == "baseline":
        must = meta.get("must_fail", {}).get(device, {})
        if any(check in checks and rank >= BUDGET_NAMES.index(b) for b, checks in must.items()):
            return Expectation("fail", f"baseline ({meta['shipped_by']}): known to fail "
                                       f"{check} on {device} at {budget}")
        if check in meta.get("may_fail", {}).get(device, []):
            return Expectation("either", f"baseline ({meta['shipped_by']}): may fail {check} "
                                         f"on {device}")
    return Expectation("pass")


@dataclass(frozen=True)
class Kernel:
    name: str       # registered name, or the target itself
    target: str     # what reproduces it on the command line
    family: str
    fn: Callable
    meta: dict = field(default_factory=lambda: {"role": "kernel"})  # ``role_of``

    @property
    def role(self) -> str:
        return self.meta["role"]


def _import_attr(target: str) -> object:
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise HarnessError(f"kernel target {target!r} is not NAME, package.module:attr "
                           "or path/to/file.py:attr")
    try:
        if module_part.endswith(".py"):
            path = Path(module_part).resolve()
            if not path.is_file():
                raise HarnessError(f"kernel file {module_part!r} does not exist")
            spec = importlib.util.spec_from_file_location(f"_harness_target_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_part)
    except HarnessError:
        raise
    except Exception as exc:  # an import that raises is the user's module, not ours
        reason = str(exc).splitlines()[0] if str(exc) else ""
        raise HarnessError(
            f"cannot import {module_part!r}: {type(exc).__name__}: {reason}") from None
    if not hasattr(module, attr):
        raise HarnessError(f"{module_part!r} has no attribute {attr!r}")
    return getattr(module, attr)


def _not_a_target(target: str, family: str, found: dict, command: str) -> HarnessError:
    """The error for a TARGET that is neither a name registered for ``family`` nor
    ``module:attr``: a name of another family names that family and the command to run;
    a module or file without ``:attr`` says so; a peer whose project does not import says
    why and how to get it; anything else gets the closest names."""
    for owner, peer, why in missing_peers(FAMILIES):
        if peer.name == target:
            where = "" if owner == family else f" (a kernel of family {owner})"
            return HarnessError(f"{target!r}{where} is registered only where {peer.requires} "
                                f"imports: {why}; {peer.install}")
    for other in FAMILIES:
        try:
            elsewhere = other != family and target in entries(other)
        except HarnessError:        # that family's registry is broken: not ours to report
            elsewhere = False
        if elsewhere:
            return HarnessError(f"{target!r} is a kernel of family {other}; run "
                                f"'sampling-harness {command} {other} --kernel {target}'")
    own = "package.module:attr or path/to/file.py:attr"
    if target.endswith(".py") or "/" in target or "." in target:
        return HarnessError(f"kernel target {target!r} names no function: give "
                            f"{target}:FUNCTION ({own})")
    mutants = sorted(name for name, entry in found.items() if entry.declared is not None)
    registered = sorted(name for name in found if name not in mutants)
    return HarnessError(f"no kernel {target!r} in family {family}"
                        f"{did_you_mean(target, found)} (registered: "
                        f"{', '.join(registered) or 'none'}; mutants: "
                        f"{', '.join(mutants) or 'none'}; a kernel of your own: {own})")


def load(target: str, family: str, *, command: str = "check") -> Kernel:
    """Resolve ``target`` for ``family`` and check that it is callable with the contract.
    ``command`` is the subcommand a name of another family is pointed to."""
    if family not in FAMILIES:
        raise HarnessError(f"unknown family {family!r}{did_you_mean(family, FAMILIES)} "
                           f"(known: {', '.join(FAMILIES)})")
    contract = FAMILIES[family]
    found = entries(family)
    if target not in found and ":" not in target:
        raise _not_a_target(target, family, found, command)
    name, resolved = (target, found[target].target) if target in found else (target, target)
    fn = _import_attr(resolved)
    if not callable(fn):
        raise HarnessError(f"kernel {target!r} is a {type(fn).__name__}, not callable")
    try:
        inspect.signature(fn).bind(*contract.parameters)
    except TypeError:
        raise HarnessError(f"kernel {target!r} has signature {inspect.signature(fn)}; family "
                           f"{family!r} calls {contract.signature}") from None
    except ValueError:
        pass  # builtins without a signature: let the first call decide
    entry = found.get(target)
    meta = entry.meta if entry is not None else role_of(fn, name, family)
    return Kernel(name=name, target=target, family=family, fn=fn, meta=meta)
