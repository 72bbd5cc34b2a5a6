"""What ``mutate`` mutates: the source reachable from a kernel target, found statically.

Reachable: the target's own top-level function; then every top-level def, class or
assignment of a module *in scope* that a reachable one names (in its body, its default
values, its decorators), and so on. A name is looked up among its module's top-level
statements and imports: ``from M import f [as g]``, ``import M as m`` then ``m.f``,
``from P import submodule [as s]`` then ``s.f``, relative imports; a name imported from a
module in scope is followed into that module (through re-exports).

In scope: the modules of the kernel's package. For the project's own kernels that is
``sampling_harness.kernels`` (kernels/); for any other target, the top-level package of the
module that defines the target function (a module outside any package: that module
alone). Never the harness itself, the standard library or a third party (torch, triton).

Not followed (documented limits): ``import a.b`` without ``as``, names built at run time
(``getattr``, ``globals()``), methods reached through an instance of a class that no
reachable code names. A local variable named like a top-level function makes that function
reachable too (an over-approximation: its sites show up as dead code).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sampling_harness.errors import HarnessError
from sampling_harness.mutate.operators import Site, Source, unit_sites

PROJECT_KERNELS = "sampling_harness.kernels"


@dataclass
class Module:
    """One module in scope: its text, tree, top-level definitions and imports."""

    name: str
    path: str
    text: str
    is_package: bool
    tree: ast.Module = field(init=False)
    definitions: dict[str, list[ast.stmt]] = field(init=False, default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(init=False, default_factory=dict)

    def __post_init__(self):
        self.tree = ast.parse(self.text)
        for node in self.tree.body:
            for name in _defined(node):
                self.definitions.setdefault(name, []).append(node)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias, target in imported(node, self.package):
                    self.imports[alias] = target

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


def _defined(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else \
        [node.target] if isinstance(node, ast.AnnAssign) else []
    names = []
    for target in targets:
        elements = target.elts if isinstance(target, ast.Tuple) else [target]
        names += [e.id for e in elements if isinstance(e, ast.Name)]
    return names


def absolute(node: ast.ImportFrom, package: str) -> str:
    """The absolute module an ``from ... import`` names (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def is_module(name: str) -> bool:
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def imported(node: ast.Import | ast.ImportFrom, package: str):
    """(alias, (module, attribute or None for a module)) of each name an import binds;
    ``import a.b`` without ``as`` binds ``a`` (followed as the module ``a``)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, (alias.name, None)
            else:
                yield alias.name.split(".")[0], (alias.name.split(".")[0], None)
        return
    module = absolute(node, package)
    for alias in node.names:
        if alias.name == "*":
            continue
        sub = f"{module}.{alias.name}"
        yield alias.asname or alias.name, (sub, None) if is_module(sub) else \
            (module, alias.name)


def scope_of(module: str) -> str:
    """The package prefix whose modules may be mutated for a target defined in ``module``."""
    if module == PROJECT_KERNELS or module.startswith(PROJECT_KERNELS + "."):
        return PROJECT_KERNELS
    if module == "sampling_harness" or module.startswith("sampling_harness."):
        raise HarnessError(f"{module} is part of the harness: mutate mutates kernels")
    top = module.split(".")[0]
    return top if top != module or _is_package(module) else module


def _is_package(name: str) -> bool:
    found = sys.modules.get(name)
    return found is not None and hasattr(found, "__path__")


def in_scope(module: str, scope: str) -> bool:
    return module == scope or module.startswith(scope + ".")


def _load(name: str) -> Module:
    module = sys.modules.get(name)
    if module is None:
        try:
            module = importlib.import_module(name)
        except Exception as exc:      # the user's module: one line
            raise HarnessError(f"cannot import {name} to read its source: "
                               f"{type(exc).__name__}: {exc}") from None
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        raise HarnessError(f"module {name} has no Python source file to mutate")
    return Module(name, str(Path(path).resolve()), Path(path).read_text(encoding="utf-8"),
                  hasattr(module, "__path__"))


@dataclass
class Reach:
    """The target (module, function name), its scope, and the reachable top-level
    statements of each module in scope, in the order they were reached."""

    module: str
    function: str
    scope: str
    modules: dict[str, Module] = field(default_factory=dict)
    units: dict[str, dict[int, tuple[str, ast.stmt]]] = field(default_factory=dict)

    def sites(self) -> list[Site]:
        """Every mutation site of every reachable statement, in a fixed order (module,
        position, operator, replacement): ids index this list."""
        found = []
        for name, units in self.units.items():
            module = self.modules[name]
            source = Source(module.text)
            for unit, node in units.values():
                found += unit_sites(name, module.path, unit, node, source)
        return sorted(found, key=lambda s: s.order)

    def files(self) -> dict[str, str]:
        """Module name -> its source file, for the modules with reachable statements."""
        return {name: self.modules[name].path for name in self.units}


def _references(node: ast.AST):
    """(name, attribute or None) of every name ``node`` reads."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            yield sub.value.id, sub.attr
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            yield sub.id, None


def reach(fn) -> Reach:
    """The reachable source of kernel function ``fn`` (decorators unwrapped)."""
    inner = inspect.unwrap(fn)
    if not inspect.isfunction(inner):
        raise HarnessError(f"mutate needs a Python function as its target, got "
                           f"{type(inner).__name__}")
    found = Reach(inner.__module__, inner.__name__, scope_of(inner.__module__))
    if not found.modules.setdefault(found.module, _load(found.module)).definitions.get(
            found.function):
        raise HarnessError(f"{found.module}:{found.function} is not a top-level function of "
                           f"its module")
    todo = [(found.module, found.function)]
    while todo:
        module_name, name = todo.pop()
        for target in _lookup(found, module_name, name):
            todo += _follow(found, *target)
    return found


def _module(found: Reach, name: str) -> Module:
    if name not in found.modules:
        found.modules[name] = _load(name)
    return found.modules[name]


def _lookup(found: Reach, module_name: str, name: str):
    """The (module, statement) pairs that define ``name`` in ``module_name``, following
    imports into modules in scope."""
    seen = set()
    while (module_name, name) not in seen:
        seen.add((module_name, name))
        module = _module(found, module_name)
        if name in module.definitions:
            return [(module_name, name, node) for node in module.definitions[name]]
        source, attribute = module.imports.get(name, (None, None))
        if source is None or attribute is None or not in_scope(source, found.scope):
            return []
        module_name, name = source, attribute
    return []


def _follow(found: Reach, module_name: str, name: str, node: ast.stmt) -> list:
    """Mark ``node`` reachable; the (module, name) pairs it names, to look up next."""
    units = found.units.setdefault(module_name, {})
    if id(node) in units:
        return []
    units[id(node)] = (name, node)
    module = found.modules[module_name]
    wanted = []
    for ref, attribute in _references(node):
        if attribute is None and ref in module.definitions:
            wanted.append((module_name, ref))
        elif ref in module.imports:
            source, imported_name = module.imports[ref]
            if not in_scope(source, found.scope):
                continue
            if imported_name is not None and attribute is None:
                wanted.append((source, imported_name))
            elif imported_name is None and attribute is not None and \
                    not is_module(f"{source}.{attribute}"):
                wanted.append((source, attribute))
    return wanted
