"""Writing a mutant: a copy of the reachable modules as a package of its own, one of them
changed at one site, importable as a kernel target; the user's files are never touched.

Mutant ``m0042`` of a target in ``sampling_harness.kernels.sample.triton_race`` lives in
``DIR/m0042/src/sampling_harness_mutant_m0042/sample/triton_race.py`` (the module's path
below its scope, ``reach.scope_of``), beside copies of the other reachable modules; the
child run gets ``DIR/m0042/src`` on its ``PYTHONPATH`` and checks the kernel target
``sampling_harness_mutant_m0042.sample.triton_race:race_exact``. In each copy the imports
of copied modules (absolute or relative) name the copies, so a mutated helper is the one
the copied target calls; every other import names the original module, made absolute.
Import statements are rewritten in place (line breaks kept), so every line of a copy has
the number it has in the original: tracebacks, coverage and the report's source view
agree. Package folders get an empty ``__init__.py`` unless the package's own is copied.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from pathlib import Path

from sampling_harness.mutate.edit import apply
from sampling_harness.mutate.operators import Site, Source
from sampling_harness.mutate.reach import Reach, absolute

PREFIX = "sampling_harness_mutant_"


@dataclass(frozen=True)
class Mutant:
    """One mutant: its id (``m`` and the index of its site among all sites), its site, and
    once written, the folder to put on ``PYTHONPATH`` and its kernel target."""

    id: str
    site: Site
    directory: Path | None = None

    @property
    def package(self) -> str:
        return PREFIX + self.id

    @property
    def source_root(self) -> Path:
        return self.directory / "src"


def copy_name(module: str, scope: str, package: str) -> str:
    """The name of ``module``'s copy inside ``package``."""
    rest = module[len(scope):].lstrip(".")
    return f"{package}.{rest}" if rest else package


def target(reach: Reach, mutant: Mutant) -> str:
    """The kernel target of the mutant's copy of the target function."""
    return f"{copy_name(reach.module, reach.scope, mutant.package)}:{reach.function}"


def rewrite_imports(text: str, module: str, is_package: bool, copied: set[str], scope: str,
                    package: str) -> str:
    """``text`` with every import of a copied module naming its copy, and every relative
    import made absolute; line numbers kept (a rewritten statement keeps its line count)."""
    tree = ast.parse(text)
    source = Source(text)
    parent = module if is_package else module.rpartition(".")[0]
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            new = _import_from(node, parent, copied, scope, package)
        elif isinstance(node, ast.Import):
            new = _import(node, copied, scope, package)
        else:
            continue
        if new is not None:
            start, end = source.span(node)
            edits.append((start, end, new + "\n" * text.count("\n", start, end)))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _names(aliases) -> str:
    return ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in aliases)


def _import_from(node: ast.ImportFrom, parent: str, copied, scope, package) -> str | None:
    source = absolute(node, parent)
    if source in copied:
        return f"from {copy_name(source, scope, package)} import {_names(node.names)}"
    moved = [a for a in node.names if f"{source}.{a.name}" in copied]
    if not moved and not node.level:
        return None
    kept = [a for a in node.names if a not in moved]
    parts = []
    if moved:      # submodules that are copied: from the copy's package
        parts.append(f"from {copy_name(source, scope, package)} import {_names(moved)}")
    if kept:
        parts.append(f"from {source} import {_names(kept)}")
    return "; ".join(parts)


def _import(node: ast.Import, copied, scope, package) -> str | None:
    if not any(a.name in copied and a.asname for a in node.names):
        return None
    return "import " + ", ".join(
        (copy_name(a.name, scope, package) if a.name in copied and a.asname else a.name)
        + (f" as {a.asname}" if a.asname else "") for a in node.names)


def write_copy(reach: Reach, package: str, root: Path, change=None) -> dict[str, Path]:
    """Copies of the reachable modules as ``package`` under ``root``, each module's text
    passed through ``change(name, text)`` first (where given); module -> its copy's file."""
    copied = set(reach.units)
    written = {}
    for name in sorted(copied):
        module = reach.modules[name]
        text = change(name, module.text) if change is not None else module.text
        text = rewrite_imports(text, name, module.is_package, copied, reach.scope, package)
        new = copy_name(name, reach.scope, package).split(".")
        path = root.joinpath(*new, "__init__.py") if module.is_package else \
            root.joinpath(*new[:-1], new[-1] + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written[name] = path
        for folder in [path.parent, *path.parent.parents]:
            if folder == root or root not in folder.parents:
                break
            (folder / "__init__.py").touch(exist_ok=True)
    return written


def write(reach: Reach, mutant: Mutant, directory: Path) -> Mutant:
    """Write ``mutant``'s package under ``directory`` (its source tree ``src/`` and
    ``mutant.diff``); the mutant with its directory. ``ValueError`` if the site cannot be
    applied."""
    site = mutant.site
    original = reach.modules[site.module].text
    mutated = apply(original, site)
    directory.mkdir(parents=True, exist_ok=True)
    diff = difflib.unified_diff(original.splitlines(keepends=True),
                                mutated.splitlines(keepends=True), site.path,
                                f"{mutant.id}: {site.label}", n=2)
    (directory / "mutant.diff").write_text("".join(diff), encoding="utf-8")
    write_copy(reach, mutant.package, directory / "src",
               lambda name, text: mutated if name == site.module else text)
    return Mutant(mutant.id, site, directory)
