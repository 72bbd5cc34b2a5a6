"""The harness run on its own kernels: every clean kernel passes, every mutant fails the
checks written in its registry entry, at the budget written there; together the mutants
make every check of the family fail at least once.

On a CPU the clean run is `check all` at the quick budget, triton-exact through the Triton
interpreter: one run, so one family-wise false-fail budget (1e-4) covers all three kernels.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from kernels import CLEAN, MUTANTS
from tests.helpers import cli, verdicts

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
GPU_ONLY = {"fit_large_vocab"}  # skipped on a CPU


def test_every_clean_kernel_passes(tmp_path):
    code, output, report = cli("check", "all", "--device", DEVICE, report_dir=tmp_path)
    assert report is not None, output
    failed = [c for c in report["checks"] if c["verdict"] != "pass"]
    assert code == 0 and not failed, f"{failed}\n{output[-3000:]}"
    assert {c["kernel"] for c in report["checks"]} == set(CLEAN["sample"])


@pytest.mark.parametrize("name", sorted(MUTANTS["sample"]))
def test_every_mutant_fails_its_checks(tmp_path, name):
    mutant = MUTANTS["sample"][name]
    expected = {check: "fail" for check in mutant.caught_by
                if DEVICE == "cuda" or check not in GPU_ONLY}
    args = ["check", "sample", "--kernel", name, "--device", DEVICE, "--budget", mutant.budget,
            "-k", " or ".join(f"test_{check}" for check in expected)]
    if name == "hangs":
        args += ["--call-timeout", "2"]
    code, output, report = cli(*args, report_dir=tmp_path)
    assert code == 1, output[-3000:]
    assert verdicts(report) == expected, output[-3000:]
    failed = report["checks"][0]
    assert failed["reproduce"].startswith("sampling-harness check sample --kernel " + name)


def test_every_check_has_a_mutant_that_fails_it():
    suites = Path(__file__).parent.parent / "suites" / "sample"
    checks = {m.group(1) for path in suites.glob("test_*.py")
              for m in re.finditer(r"^def test_(\w+)\(check\)", path.read_text(), re.M)}
    caught = {c for m in MUTANTS["sample"].values() for c in m.caught_by}
    assert checks and checks <= caught, checks - caught

