"""``--help`` and usage errors import no torch: the parsers are built from light modules
(the families' names come from their entry points) and a command's heavy imports (torch,
Triton, the report writers, pytest, Hypothesis) sit in the function that runs it, so
``sampling-harness --help`` or a typo answers at once, not after torch's seconds of import.

Each case runs ``python -m sampling_harness ARGS`` in a fresh interpreter (through runpy, so
harness/__main__.py is the way in) and reads ``sys.modules`` once it has exited."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from sampling_harness.commands import cli

# must not be imported by --help or a usage error (numpy: the report writers' plots and
# statistics, pandas and scipy come with it)
HEAVY = ("torch", "triton", "numpy", "pytest", "hypothesis", "sampling_harness.report.writers")

CHILD = """
import json, runpy, sys
sys.argv = ["sampling-harness", *sys.argv[1:]]
try:
    runpy.run_module("sampling_harness", run_name="__main__", alter_sys=True)
except SystemExit as done:
    code = done.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def run(*args: str) -> tuple[int, list[str], str, str]:
    """``sampling-harness ARGS`` in a fresh interpreter: (exit code, the modules of ``HEAVY``
    it imported, stdout without the last line, stderr)."""
    done = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True,
                          text=True, timeout=120)
    *output, last = done.stdout.splitlines() or [""]
    try:
        said = json.loads(last)
    except json.JSONDecodeError:
        pytest.fail(f"the child did not finish: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    imported = [name for name in HEAVY if name in said["modules"]]
    return said["code"], imported, "\n".join(output), done.stderr


def subcommands() -> list[str]:
    parser = cli._parser()
    return list(next(a for a in parser._actions
                     if isinstance(a, argparse._SubParsersAction)).choices)


def test_the_subcommands_are_read_from_the_parser():
    assert {"check", "list", "bench", "selftest", "mutate"} <= set(subcommands())


@pytest.mark.parametrize("args", [(), *((name,) for name in subcommands())],
                         ids=lambda args: " ".join(args) or "top")
def test_help_imports_no_torch(args):
    code, imported, output, _ = run(*args, "--help")
    assert code == 0
    assert output.startswith(" ".join(("usage: sampling-harness", *args)))
    assert imported == [], f"{' '.join(args) or 'top-level'} --help imported {imported}"


@pytest.mark.parametrize("args,line", [
    (("check", "sampel"), "sampling-harness: error: unknown family 'sampel'; did you mean "
                          "'sample'? (known: sample, "),
    (("check", "sample", "--budget", "nope"),
     "sampling-harness: error: argument --budget: invalid choice: 'nope' (choose from smoke, "
     "quick, standard, thorough)"),
])
def test_a_usage_error_imports_no_torch_and_is_one_line(args, line):
    code, imported, output, error = run(*args)
    assert code == 2 and output == ""
    assert error.splitlines() == [error.strip()] and error.startswith(line), error
    assert imported == [], f"{' '.join(args)} imported {imported}"


def test_simulate_names_the_engines_parts():
    """``simulate`` spells the engine's parts for its parser (no engine import); they are
    the engine's own."""
    from sampling_harness.commands.simulate import PARTS
    from sampling_harness.suites.spec_decode.engine import DEFAULT_PARTS

    assert PARTS == DEFAULT_PARTS
