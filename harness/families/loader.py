"""Turning a TARGET string into a kernel: a registered name, ``pkg.module:attr`` or
``path/to/file.py:attr``. Every failure is a ``HarnessError`` with a one-line reason."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES
from sampling_harness.families.registry import entries, missing_peers, role_of
from sampling_harness.words import did_you_mean


@dataclass(frozen=True)
class Kernel:
    name: str       # registered name, or the target itself
    target: str     # what reproduces it on the command line
    family: str
    fn: Callable
    meta: dict = field(default_factory=lambda: {"role": "kernel"})  # ``registry.role_of``

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
