"""The harness run on its own kernels: every clean kernel passes, every mutant fails the
check written in its registry entry, at the budget written there.

On a CPU the clean run is `check all` at the quick budget, triton-exact through the Triton
interpreter: one run, so one family-wise false-fail budget (1e-4) covers all three kernels.
"""

from __future__ import annotations

import pytest
import torch

from kernels import CLEAN, MUTANTS
from tests.helpers import cli, verdicts

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_every_clean_kernel_passes(tmp_path):
    code, output, report = cli("check", "all", "--device", DEVICE, report_dir=tmp_path)
    assert report is not None, output
    failed = [c for c in report["checks"] if c["verdict"] != "pass"]
    assert code == 0 and not failed, f"{failed}\n{output[-3000:]}"
    assert {c["kernel"] for c in report["checks"]} == set(CLEAN["sample"])


@pytest.mark.parametrize("name", sorted(MUTANTS["sample"]))
def test_every_mutant_fails_its_check(tmp_path, name):
    mutant = MUTANTS["sample"][name]
    args = ["check", "sample", "--kernel", name, "--device", DEVICE, "--budget", mutant.budget,
            "-k", f"test_{mutant.caught_by}"]
    if name == "hangs":
        args += ["--call-timeout", "2"]
    code, output, report = cli(*args, report_dir=tmp_path)
    assert code == 1, output[-3000:]
    assert verdicts(report) == {mutant.caught_by: "fail"}, output[-3000:]
    failed = report["checks"][0]
    assert failed["reproduce"].startswith("sampling-harness check sample --kernel " + name)
