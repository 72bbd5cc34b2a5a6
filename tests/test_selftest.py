"""The harness run on its own kernels: every registered kernel passes and every baseline
meets its stated expectation; every mutant fails the checks its metadata names, at the
budget named there; together the mutants of a family make every check of that family fail
at least once.

On a CPU the clean run is `check all` at the smoke budget (every edge case of every
validity check, few draws; the Triton kernels through the Triton interpreter, where quick
takes ten minutes, five of them triton-exact, whose draws tests/test_triton_race.py couples
to a float64 race bit for bit), on a GPU at quick: one run, so one family-wise false-fail
budget (1e-4) covers all kernels of all families.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from harness.families import FAMILIES
from harness.registry import by_role, default_kernels
from tests.helpers import cli, verdicts

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
SUITES = Path(__file__).parent.parent / "suites"
CHECK = re.compile(r"^((?:@pytest\.mark\.\w+\n)*)def test_(\w+)\(check\)", re.M)


def checks(family: str) -> dict[str, bool]:
    """Every check of a family's suite -> whether it runs on a GPU only."""
    return {m.group(2): "@pytest.mark.gpu" in m.group(1)
            for path in (SUITES / FAMILIES[family].suite).glob("test_*.py")
            for m in CHECK.finditer(path.read_text())}


def _mutants() -> dict[tuple[str, str], dict]:
    return {(family, name): entry.meta for family in FAMILIES
            for name, entry in by_role(family, "mutant").items()}


def test_every_registered_kernel_passes(tmp_path):
    budget = "quick" if DEVICE == "cuda" else "smoke"
    code, output, report = cli("check", "all", "--device", DEVICE, "--budget", budget,
                               report_dir=tmp_path, timeout=1800)
    assert report is not None, output
    failed = [c for c in report["checks"] if c["expected"] not in (c["verdict"], "either")]
    assert code == 0 and not failed, f"{failed}\n{output[-3000:]}"
    expected = {(family, kernel) for family in FAMILIES for kernel in default_kernels(family)}
    assert {(c["family"], c["kernel"]) for c in report["checks"]} == expected


@pytest.mark.parametrize("family,name", list(_mutants()))
def test_every_mutant_fails_its_checks(tmp_path, family, name):
    mutant, gpu_only = _mutants()[family, name], checks(family)
    tool = mutant.get("tool", "")
    if tool and DEVICE != "cuda":
        pytest.skip(f"caught by compute-sanitizer {tool} on a GPU (never run on a "
                    "CPU: a store past a malloc chunk may corrupt the test process's heap)")
    if DEVICE not in mutant.get("devices", ["cpu", "cuda"]):
        pytest.skip(f"its bug lives in {', '.join(mutant['devices'])} random numbers only: "
                    f"{mutant['bug'][:80]}")
    expected = {check + (f"_{tool}" if tool else ""): "fail"
                for check in mutant["caught_by"] if DEVICE == "cuda" or not gpu_only[check]}
    args = ["check", family, "--kernel", name, "--device", DEVICE, "--budget", mutant["budget"],
            "-k", " or ".join(f"test_{check}" for check in mutant["caught_by"])]
    if tool:
        args += ["--sanitize", tool]
    if name == "hangs":
        args += ["--call-timeout", "2"]
    code, output, report = cli(*args, report_dir=tmp_path)
    assert code == 1, output[-3000:]
    assert verdicts(report) == expected, output[-3000:]
    failed = report["checks"][0]
    assert failed["reproduce"].startswith(f"sampling-harness check {family} --kernel {name}")


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_check_has_a_mutant_that_fails_it(family):
    found = checks(family)
    caught = {c for (f, _), m in _mutants().items() if f == family for c in m["caught_by"]}
    assert found and set(found) <= caught, set(found) - caught
    unknown = caught - set(found)
    assert not unknown, f"mutants name checks that do not exist: {unknown}"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_k_selects_one_check(family):
    """``-k test_<check>`` (the self-test's and every reproduce command's selection) picks
    that check alone: its name is no part of another check's name or suite file."""
    keywords = {name: {f"test_{name}"} for name in checks(family)}
    for path in (SUITES / FAMILIES[family].suite).glob("test_*.py"):
        for m in CHECK.finditer(path.read_text()):
            keywords[m.group(2)].add(path.name)
    for name in keywords:
        clashes = [other for other, words in keywords.items()
                   if other != name and any(f"test_{name}" in w for w in words)]
        assert not clashes, f"-k test_{name} also selects {clashes}"
