"""One code path: no module in kernels/ (mutants included) takes a branch that only the
Triton interpreter takes, or picks its algorithm by batch size on the interpreter alone.

CI runs the Triton kernels through the interpreter on a CPU; its statistical evidence is
worth something only if it covers the code a GPU runs. So, read from each module's syntax
tree (no import, nothing run): no module reads the environment (TRITON_INTERPRET or any
other variable: a kernel's path may depend on its inputs and their device alone), names
TRITON_INTERPRET, or has an identifier (name, attribute, argument, function, keyword) about
the interpreter or a host path (``INTERPRET``, ``interpret``, ``HOST_PATH_ROWS``,
``host_rows``, ...), and none imports the interpreter. Launch settings may still depend on
``device.type`` (the interpreter runs on CPU tensors): the same kernels with other tiles.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
FLAGGED_NAME = re.compile(r"interpret|host_?path|host_rows", re.IGNORECASE)
ENVIRONMENT = {"environ", "getenv", "putenv", "environb"}


def identifiers(node: ast.AST) -> list[tuple[int, str]]:
    """(line, identifier) of a node that names something: variables, attributes, arguments,
    functions and classes, keywords, imported names."""
    if isinstance(node, ast.Name):
        return [(node.lineno, node.id)]
    if isinstance(node, ast.Attribute):
        return [(node.lineno, node.attr)]
    if isinstance(node, ast.arg):
        return [(node.lineno, node.arg)]
    if isinstance(node, ast.keyword) and node.arg:
        return [(node.value.lineno, node.arg)]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(node.lineno, node.name)]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        module = getattr(node, "module", None) or ""
        return [(node.lineno, name) for alias in node.names
                for name in (alias.name, alias.asname or "", module) if name]
    return []


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of a tree (prose may mention the interpreter)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant):
            found.add(id(node.body[0].value))
    return found


def module_violations(source: str) -> list[str]:
    """What in ``source`` breaks the rule (module docstring), one line each."""
    tree = ast.parse(source)
    prose = docstrings(tree)
    found = []
    for node in ast.walk(tree):
        for line, name in identifiers(node):
            if FLAGGED_NAME.search(name):
                found.append(f"line {line}: names {name!r} (an interpreter-only branch?)")
            elif name in ENVIRONMENT:
                found.append(f"line {line}: reads the environment ({name})")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and "TRITON_INTERPRET" in node.value and id(node) not in prose:
            found.append(f"line {node.lineno}: the string TRITON_INTERPRET")
    return sorted(set(found))


MODULES = sorted(KERNELS.rglob("*.py"))


def test_the_kernels_are_found():
    names = {path.relative_to(KERNELS).as_posix() for path in MODULES}
    assert {"sample_logits/triton_filtered_race.py", "logprobs/triton_logprobs.py",
            "rejection/triton_rejection.py", "mutants/memory_mutants.py"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(KERNELS).as_posix())
def test_no_kernel_branches_on_the_interpreter(path):
    found = module_violations(path.read_text())
    assert not found, f"kernels/{path.relative_to(KERNELS).as_posix()}: " + "; ".join(found)


@pytest.mark.parametrize("source", [
    'import os\nINTERPRET = os.environ.get("TRITON_INTERPRET") == "1"\n',
    'import os\nif os.getenv("X"):\n    pass\n',
    "HOST_PATH_ROWS = 256\n",
    "def launch(batch, interpret):\n    return 1 if interpret else 2\n",
    "def call(x):\n    return run(x, interpreted=True)\n",
    "from triton.runtime.interpreter import InterpreterError\n",
    "def host_rows(x):\n    return x\n",
    "flag = 'TRITON_INTERPRET'\n",
])
def test_the_rule_catches_interpreter_branches(source):
    """The check itself can fail: each of these snippets breaks the rule."""
    assert module_violations(source)


def test_the_rule_lets_device_type_launch_settings_and_prose_pass():
    source = ('"""On a CPU the Triton interpreter pays per program: TRITON_INTERPRET=1."""\n'
              'def launch(batch, device):\n'
              '    """Tiles by device type (the interpreter runs on CPU tensors)."""\n'
              '    return (1, 2048) if device.type == "cuda" else (batch, 2**17)  # interpreter\n')
    assert module_violations(source) == []


def launched_kernels_specialising_the_seed(source: str) -> list[str]:
    """The ``@triton.jit`` functions launched in ``source`` (``name[grid](...)``) that take a
    ``seed`` without ``do_not_specialize=["seed", ...]``. Compiled Triton specialises an int
    argument equal to 1 into a constant (the interpreter never does), so a seed of 1 takes
    another compiled path, and per-request seeds' ``seed.dtype.is_ptr()`` fails to compile."""
    tree = ast.parse(source)
    launched = {node.value.id for node in ast.walk(tree)
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)}
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or fn.name not in launched \
                or not any(a.arg == "seed" for a in fn.args.args):
            continue
        for decorator in fn.decorator_list:
            text = ast.unparse(decorator)
            if text.startswith("triton.jit") and not re.search(
                    r"do_not_specialize=\[[^\]]*'seed'", text):
                found.append(fn.name)
    return found


@pytest.mark.parametrize("path", sorted(KERNELS.rglob("*.py")), ids=lambda p: p.name)
def test_no_launched_kernel_specialises_its_seed(path):
    found = launched_kernels_specialising_the_seed(path.read_text())
    assert not found, f"{path.name}: {found} take a seed without do_not_specialize"


def test_the_seed_rule_can_fail():
    source = ("@triton.jit\ndef _k(out, seed, V):\n    pass\n\n"
              "@triton.jit(do_not_specialize=['seed'])\ndef _ok(out, seed):\n    pass\n\n"
              "def call():\n    _k[(1,)](o, 1, 2)\n    _ok[(1,)](o, 1)\n")
    assert launched_kernels_specialising_the_seed(source) == ["_k"]
