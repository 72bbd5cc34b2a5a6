"""The checks each family declares (``sampling_harness.families.Check``) and the suite files agree
exactly; every declared check has a mutant that fails it; ``-k test_<check>`` selects one
check. Static: the suites are read as source, nothing runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES, Check, Family
from sampling_harness.families.registry import by_role, role_of

SUITES = Path(__file__).parent.parent / "suites"
DECLARED_MARKS = ("statistical", "gpu")


def suite_checks(family: str) -> dict[str, tuple[str, list[str]]]:
    """Every test function of the family's suite files -> (its file, the marks it writes)."""
    found = {}
    for path in sorted((SUITES / FAMILIES[family].suite).glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                marks = [d.attr for d in node.decorator_list if isinstance(d, ast.Attribute)]
                found[node.name.removeprefix("test_")] = (path.name, marks)
    return found


@pytest.mark.parametrize("family", list(FAMILIES))
def test_declaration_and_suite_agree(family):
    declared = {c.name: c.file for c in FAMILIES[family].checks}
    found = suite_checks(family)
    undeclared = {name: file for name, (file, _) in found.items() if name not in declared}
    assert not undeclared, f"check functions not declared in harness/families: {undeclared}"
    absent = {name: file for name, file in declared.items() if name not in found}
    assert not absent, f"declared checks with no test function: {absent}"
    moved = {name: (declared[name], file) for name, (file, _) in found.items()
             if file != declared[name]}
    assert not moved, f"declared in one file, found in another: {moved}"
    marked = {name: marks for name, (_, marks) in found.items()
              if set(marks) & set(DECLARED_MARKS)}
    assert not marked, f"marks that belong to the declaration, written in the suite: {marked}"


def test_every_suite_belongs_to_a_family():
    suites = {path.parent.name for path in SUITES.glob("*/test_*.py")}
    assert suites == {family.suite for family in FAMILIES.values()}


def test_each_check_says_what_it_detects():
    for family in FAMILIES.values():
        for check in family.checks:
            assert check.detects and "\n" not in check.detects, (family.name, check.name)
            assert check.file.startswith("test_") and check.file.endswith(".py")


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
    """``-k test_<check>`` (the self-test's selection) picks that check alone: its name is no
    part of another check's name or suite file."""
    checks = FAMILIES[family].checks
    keywords = {c.name: {c.function, c.file} for c in checks}
    for name in keywords:
        clashes = [other for other, words in keywords.items()
                   if other != name and any(f"test_{name}" in w for w in words)]
        assert not clashes, f"-k test_{name} also selects {clashes}"


def test_a_mutant_naming_an_undeclared_check_is_refused():
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


def test_a_family_cannot_declare_a_check_twice():
    twice = (Check("a", "test_a.py", "x"), Check("a", "test_b.py", "y"))
    with pytest.raises(HarnessError, match=r"declares check\(s\) \['a'\] twice"):
        Family("f", (), "", lambda out, inputs: out, lambda inputs: 0, lambda inputs: 0, {},
               checks=twice)


class _Item:
    """The little of a collected pytest item that the plugin reads when marking checks."""

    def __init__(self, family: str, function: str, file: str):
        self.marks = {"family": pytest.mark.family(family).mark}
        self.fixturenames, self.originalname, self.name = ("check", "kernel"), function, function
        self.path, self.nodeid = Path(file), f"{file}::{function}"

    def get_closest_marker(self, name):
        return self.marks.get(name)

    def add_marker(self, name):
        self.marks[name] = getattr(pytest.mark, name).mark


def test_the_plugin_marks_checks_from_the_declaration():
    from sampling_harness.run.plugin import _mark_as_declared
    fit, tail, validity = (_Item("sample", "test_fit_large_vocab", "test_fit.py"),
                           _Item("sample", "test_tail", "test_tail.py"),
                           _Item("sample", "test_validity", "test_validity.py"))
    _mark_as_declared([fit, tail, validity])
    assert set(fit.marks) == {"family", "statistical", "gpu"}
    assert set(tail.marks) == {"family", "statistical"} and set(validity.marks) == {"family"}
    with pytest.raises(pytest.UsageError, match="family 'sample' declares no check 'speed'"):
        _mark_as_declared([_Item("sample", "test_speed", "test_fit.py")])
    with pytest.raises(pytest.UsageError, match="declares check 'tail' in test_tail.py, not "
                                                "test_fit.py"):
        _mark_as_declared([_Item("sample", "test_tail", "test_fit.py")])


def test_the_api_names_a_misspelt_check_before_it_runs(tmp_path):
    from sampling_harness.api import run_checks
    with pytest.raises(HarnessError, match="family 'sample' declares no check 'fit'; its "
                                           "checks: validity, fit_curated"):
        run_checks("sample", "torch-fp64", tmp_path, checks=["fit"])
    assert not any(tmp_path.iterdir())
