"""Which lines of the reachable source the original's check run executed (dead code).

The original's run checks an *instrumented copy* of the reachable modules (written like a
mutant, harness/mutate/workspace.py; the same outputs, bit for bit: the recorder's
``original_repeats`` says so at every gap). Two measures:

* probes: in every function body, each simple statement gets ``_sampling_harness_hit(F,
  L); `` put before it on its line, and each ``if``/``while`` test, ``for`` iterable and
  first ``with`` item is wrapped as ``_sampling_harness_hit(F, L, expr)``, L the
  statement's first line (characters inserted, no line added: line numbers stay). The
  probe is a builtin the child run installs (``install``); it costs one call per statement
  run, where tracing every Python call with ``sys.settrace`` doubled a run under Triton's
  interpreter. ``@triton.jit`` functions get probes only where they run as Python: under
  ``TRITON_INTERPRET=1`` (a CPU run), whose interpreter runs a rewritten copy of each
  function with its file's line numbers.
* compiled lines (a GPU run): a compiled ``@triton.jit`` function has no probes. Its lines
  are read from the Triton IR of every kernel the run launched (``JITFunction.
  device_caches``: the ``loc("file":line:col)`` entries of each compiled kernel's TTIR;
  inlined helpers keep their own file and lines). A line with no instruction there (a
  ``tl.constexpr`` branch the launch settings never take, code the compiler removed as
  unused) never ran. Lines with instructions count as run, even in a runtime branch no
  thread takes: on a GPU, dead code is decided per block of statements and never
  over-reported (``reached``).
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import sys
from collections.abc import Iterable

from sampling_harness.mutate.operators import Source, is_jit

PROBE = "_sampling_harness_hit"
ENV_TRACE = "SAMPLING_HARNESS_MUTATE_TRACE"   # the original's run: what to probe (child.py)
LOCATION = re.compile(r'loc\("([^"]+)":(\d+):\d+\)')
HITS: set[tuple[int, int]] = set()
_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise,
           ast.Assert, ast.Delete, ast.Pass, ast.Break, ast.Continue, ast.Import,
           ast.ImportFrom, ast.Global, ast.Nonlocal)


def hit(file: int, line: int, value=None):
    """The probe: note (file, line) ran; hand ``value`` back (a wrapped test)."""
    HITS.add((file, line))
    return value


def install() -> None:
    """Make the probe a builtin of this process (the instrumented copies call it)."""
    setattr(builtins, PROBE, hit)


def instrument(text: str, file: int, jit_too: bool) -> str:
    """``text`` with probes in its function bodies (``jit_too``: in ``@triton.jit`` ones as
    well); every line keeps its number."""
    tree = ast.parse(text)
    source = Source(text)
    edits: list[tuple[int, str]] = []

    def block(statements: list[ast.stmt]) -> None:
        for i, statement in enumerate(statements):
            if i == 0 and isinstance(statement, ast.Expr) and isinstance(
                    statement.value, ast.Constant) and isinstance(statement.value.value, str):
                continue                               # a docstring
            probe = f"{PROBE}({file}, {statement.lineno}"
            if isinstance(statement, _SIMPLE):
                edits.append((source.span(statement)[0], probe + "); "))
            tested = statement.test if isinstance(statement, (ast.If, ast.While)) else \
                statement.iter if isinstance(statement, (ast.For, ast.AsyncFor)) else \
                statement.items[0].context_expr if isinstance(
                    statement, (ast.With, ast.AsyncWith)) else None
            if tested is not None:
                start, end = source.span(tested)
                edits.extend([(start, probe + ", "), (end, ")")])
            inside(statement)

    def inside(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if jit_too or not is_jit(node):
                block(node.body)
            return
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, field, None) or []:
                if isinstance(child, ast.stmt):
                    continue
                block(child.body)                        # an except handler, a match case
            children = getattr(node, field, None) or []
            if children and isinstance(children[0], ast.stmt):
                if isinstance(node, (ast.Module, ast.ClassDef)):
                    for child in children:
                        inside(child)                      # module and class bodies: no probes
                else:
                    block(children)

    inside(tree)
    for offset, insert in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:offset] + insert + text[offset:]
    return text


def _jit_functions(value) -> list:
    """The ``JITFunction`` behind a module attribute (an autotuner or heuristics wrapper
    holds it as ``fn``), if any."""
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return []
    for _ in range(4):
        if isinstance(value, JITFunction):
            return [value]
        value = getattr(value, "fn", None)
        if value is None:
            break
    return []


def compiled_lines(files: Iterable[str]) -> dict[str, set[int]]:
    """File -> the lines of ``files`` that some compiled kernel of this process holds an
    instruction of (the TTIR's locations of every kernel launched from those files)."""
    wanted = {os.path.realpath(f) for f in files}
    found: dict[str, set[int]] = {name: set() for name in wanted}
    by_tail = {_tail(name): name for name in wanted}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or os.path.realpath(path) not in wanted:
            continue
        for value in list(vars(module).values()):
            for jit in _jit_functions(value):
                for cache in list(getattr(jit, "device_caches", {}).values()):
                    kernels = cache[0] if isinstance(cache, tuple) else cache
                    for compiled in list(getattr(kernels, "values", lambda: [])()):
                        text = getattr(compiled, "asm", {}).get("ttir") or ""
                        for file, line in LOCATION.findall(text):
                            real = by_tail.get(_tail(os.path.realpath(file)))
                            if real is not None:
                                found[real].add(int(line))
    return found


def _tail(path: str) -> tuple[str, ...]:
    """A source file's folder and name: how a kernel's TTIR names it. A kernel the Triton
    cache already held (the same source compiled from the user's own file, by an earlier
    run) names that file, not the copy this run imported: matched on the tail, its lines
    still count as run (else every line of it would be reported dead)."""
    return tuple(os.path.normpath(path).split(os.sep)[-2:])


def reached(site, coverage: dict) -> bool:
    """Whether ``site`` ran in the original's run (``coverage``: what child.py wrote, by
    original file). Import-time code always ran. A ``@triton.jit`` site of a compiled (GPU)
    run: some line of its block of statements holds an instruction; any other site: the
    probe of its statement (or of its compound statement's header) fired."""
    if site.anchor is None:
        return True
    if site.jit and not coverage.get("interpreted", True):
        lines, (lo, hi) = coverage["compiled"].get(site.path, []), site.block or site.anchor
    else:
        lines, (lo, hi) = coverage["probed"].get(site.path, []), site.anchor
    return any(lo <= line <= hi for line in lines)
