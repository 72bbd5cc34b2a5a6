"""No import cycle among the harness's modules. Static: every ``import`` statement of
harness/, kernels/, reference/ and suites/ (at module level or inside a function: a cycle
closed late is still a cycle) is read with ``ast``, resolved to the module it loads, and the
graph searched for cycles."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parent.parent
MAPPED = {"harness": "sampling_harness", "kernels": "sampling_harness.kernels",
          "reference": "sampling_harness.reference", "suites": "sampling_harness.suites"}


def modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file (a package is its __init__.py). The
    folders install under the one import name (pyproject's package-dir)."""
    found = {}
    for folder, prefix in MAPPED.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = (*prefix.split("."), *path.relative_to(ROOT / folder).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports: ``import a.b``, ``from a import b`` (b a
    module or a name defined in a), relative imports included."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:     # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_no_import_cycle_in_the_harness():
    graph = import_graph()
    found = cycles(graph)
    described = ["; ".join(f"{a} -> {b}" for a in cycle for b in sorted(graph[a]) if b in cycle)
                 for cycle in found]
    assert not found, "import cycles: " + " | ".join(described)


def test_the_search_sees_a_cycle_and_the_imports_it_is_made_of():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    graph = import_graph()
    assert "sampling_harness.errors" in graph["sampling_harness.families"]
    assert "sampling_harness.families" in graph["sampling_harness.suites.sample"]
    assert "sampling_harness.commands.calibrate" in graph["sampling_harness.commands.cli"]
    assert "sampling_harness.report.schema" in graph["sampling_harness.commands.compare"]
    assert "sampling_harness.commands.reproduce" not in graph["sampling_harness.commands.compare"]


def _part(module: str) -> str:
    """Which of the design's floors a module lives on: kernels, reference, suites, the
    commands (harness/commands/) or the rest of the harness."""
    for folder in ("kernels", "reference", "suites", "commands"):
        if f"{module}.".startswith(f"sampling_harness.{folder}."):
            return folder
    return "harness"


def test_dependencies_point_one_way():
    """The folders depend one way, commands -> suites -> harness -> reference (a suite may
    import the harness and the reference, the harness the reference, never the other way
    round; the commands, the top floor, may import a suite: ``simulate`` runs spec-decode's
    engine); kernels import neither the harness nor the suites (a kernel is just a
    function), reference only numpy, scipy and torch."""
    allowed = {("suites", "harness"), ("suites", "reference"), ("harness", "reference"),
               ("commands", "suites"), ("commands", "harness"), ("commands", "reference"),
               ("harness", "commands")}
    against = sorted(f"{a} -> {b}" for a, targets in import_graph().items() for b in targets
                     if _part(a) != _part(b) and (_part(a), _part(b)) not in allowed)
    assert not against, against


def test_no_suite_imports_another_suite():
    """Each family's suite (suites/<family>/) imports only itself, the harness and the
    reference: check code two families share lives in harness/checks/ (and Hypothesis
    strategies in harness/strategies/)."""
    def family(module: str) -> str | None:
        parts = module.split(".")
        in_suites = parts[:2] == ["sampling_harness", "suites"] and len(parts) > 2
        return parts[2] if in_suites else None

    against = sorted(f"{a} -> {b}" for a, targets in import_graph().items() for b in targets
                     if family(a) and family(b) and family(a) != family(b))
    assert not against, against
