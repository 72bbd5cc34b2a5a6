"""A family is declared in one place (``sampling_harness.families.Family``): its checks point
at their functions, its mutants name the checks that catch them, and the plugin makes the
test items from that declaration alone: no wrapper functions, no marks written in suites,
every declared check has a mutant that fails it, ``-k test_<check>`` selects one check."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES, Check, Family, Mutant, declaring_files
from sampling_harness.families.registry import by_role, role_of

SUITES = Path(__file__).parent.parent / "suites"


def test_no_suite_writes_a_test_function_or_a_mark():
    """The items come from the declarations: a ``def test_`` or ``check.run(`` in suites/ is a
    second declaration, and a ``pytest.mark`` there a second source of marks."""
    found = [f"{path.relative_to(SUITES)}: {word}" for path in sorted(SUITES.rglob("*.py"))
             for word in ("def test_", "check.run(", "pytest.mark") if word in path.read_text()]
    assert not found, found


OWN = [name for name, path in declaring_files().items() if SUITES in path.parents]


@pytest.mark.parametrize("family", OWN)
def test_each_check_is_a_function_of_its_family(family):
    spec = FAMILIES[family]
    for check in spec.checks:
        assert callable(check.function), check.name
        assert check.function.__module__.startswith(f"sampling_harness.suites.{spec.suite}."), (
            check.name, check.function.__module__)
        assert check.detects and "\n" not in check.detects, check.name


def test_every_suite_is_a_family():
    suites = {path.parent.name for path in SUITES.glob("*/__init__.py")}
    assert suites == {FAMILIES[name].suite for name in OWN}
    assert all(declaring_files()[name] == SUITES / FAMILIES[name].suite / "__init__.py"
               for name in OWN)


def _mutants(family: str) -> dict[str, dict]:
    return {name: entry.meta for name, entry in by_role(family, "mutant").items()}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_check_has_a_mutant_that_fails_it(family):
    declared = {c.name for c in FAMILIES[family].checks}
    caught = {c for meta in _mutants(family).values() for c in meta["caught_by"]}
    assert declared and declared <= caught, f"no mutant fails {declared - caught}"
    assert caught <= declared, f"mutants name checks not declared: {caught - declared}"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_k_selects_one_check(family):
    """``-k test_<check>`` (the self-test's selection) picks that check alone: its item name is
    no part of another check's."""
    names = [c.test_name for c in FAMILIES[family].checks]
    for name in names:
        clashes = [other for other in names if other != name and name in other]
        assert not clashes, f"-k {name} also selects {clashes}"


def _family(**declared) -> Family:
    return Family("f", (), "", lambda out, inputs: out, lambda inputs: 0, lambda inputs: 0, {},
                  **declared)


def test_a_declaration_is_refused_where_it_contradicts_itself():
    def fit(ctx):
        return None

    with pytest.raises(HarnessError, match=r"declares check\(s\) \['a'\] twice"):
        _family(checks=(Check("a", fit, "x"), Check("a", fit, "y")))
    with pytest.raises(HarnessError, match=r"mutant 'm' of family 'f' must be caught by checks "
                                           r"the family declares \(unknown: \['b'\]\)"):
        _family(checks=(Check("a", fit, "x"),),
                mutants=(Mutant("m", "pkg.mod:m", ("a", "b"), "quick", "-"),))
    with pytest.raises(HarnessError, match=r"at a budget in"):
        _family(checks=(Check("a", fit, "x"),),
                mutants=(Mutant("m", "pkg.mod:m", ("a",), "fast", "-"),))
    with pytest.raises(HarnessError, match=r"declares mutant\(s\) \['m'\] twice"):
        _family(checks=(Check("a", fit, "x"),),
                mutants=(Mutant("m", "pkg.mod:m", ("a",), "quick", "-"),) * 2)


def test_a_registered_mutant_naming_an_undeclared_check_is_refused():
    """An outside package may still register a mutant by entry point, its metadata on the
    function (kernels/meta.py): the checks it names must be declared."""
    def wrong(probs, seed):
        return probs
    wrong.sampling_harness = {"role": "mutant", "caught_by": ["validity", "fitness"],
                              "budget": "quick", "bug": "-"}
    with pytest.raises(HarnessError, match=r"names check\(s\) \['fitness'\] that the family "
                                           r"does not declare; its checks: validity, "):
        role_of(wrong, "wrong", "sample")
    wrong.sampling_harness = {"role": "baseline", "shipped_by": "-",
                              "may_fail": {"cuda": ["tails"]}}
    with pytest.raises(HarnessError, match=r"\['tails'\]"):
        role_of(wrong, "wrong", "sample")


def _collected(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(declaring_files()["sample"]), "--collect-only",
         "-q", "-p", "no:cacheprovider", "--harness-device", "cpu", "--harness-kernel",
         "torch-fp64", *args], capture_output=True, text=True, cwd=SUITES.parent)
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]
    return re.findall(r"^\S+::(test_\w+\[[^\]]+\])$", done.stdout, re.M)


def test_the_plugin_makes_and_marks_the_items_from_the_declaration():
    """One item per declared check and kernel, named ``test_<check>[<kernel>]``, marked
    ``statistical`` and ``gpu`` as declared (``-m`` selects by those marks)."""
    checks = FAMILIES["sample"].checks
    assert _collected() == [f"{c.test_name}[torch-fp64]" for c in checks]
    assert _collected("-m", "statistical") == [
        f"{c.test_name}[torch-fp64]" for c in checks if c.statistical]
    assert _collected("-m", "gpu") == [f"{c.test_name}[torch-fp64]" for c in checks if c.gpu]


def test_the_api_names_a_misspelt_check_before_it_runs(tmp_path):
    from sampling_harness.api import run_checks
    with pytest.raises(HarnessError, match=r"family 'sample' declares no check 'fit' \(its "
                                           r"checks: validity, fit_curated"):
        run_checks("sample", "torch-fp64", tmp_path, checks=["fit"])
    assert not any(tmp_path.iterdir())
