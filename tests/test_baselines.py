"""Baselines: an engine's shipped behaviour with a stated expectation, which a run gates on.

A baseline that fails where its expectation says it must passes the run (reported apart,
JUnit `skipped`); one that passes a check it is stated to fail, or fails one it is not,
fails the run. Expectations are stated per device and from a budget up (kernels/meta.py).
"""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET

import pytest

from sampling_harness.families.registry import expectation, role_of
from sampling_harness.kernels.meta import baseline
from tests.helpers import cli

META = baseline("an engine", must_fail={"cuda": {"standard": ("tail",)}},
                may_fail={"cuda": ("tail", "fit_generated")})(lambda probs, seed: None)


@pytest.mark.parametrize("name,device,budget,expected", [
    ("tail", "cuda", "standard", "fail"), ("tail", "cuda", "thorough", "fail"),
    ("tail", "cuda", "quick", "either"), ("fit_generated", "cuda", "standard", "either"),
    ("fit_curated", "cuda", "standard", "pass"), ("tail", "cpu", "thorough", "pass")])
def test_expectation_by_device_and_budget(name, device, budget, expected):
    assert expectation(role_of(META), name, device, budget).verdict == expected


def test_kernels_and_mutants_must_pass():
    assert expectation({"role": "kernel"}, "tail", "cuda", "standard").verdict == "pass"
    mutant = {"role": "mutant", "caught_by": ["tail"], "budget": "quick", "bug": "b"}
    assert expectation(role_of(type("F", (), {"sampling_harness": mutant})), "tail", "cpu",
                       "quick").verdict == "pass"


def test_bad_metadata_is_one_line():
    fn = type("F", (), {"sampling_harness": {"role": "guess"}})
    with pytest.raises(Exception, match="role in"):
        role_of(fn, "weird")


KERNELS = textwrap.dedent('''
    import torch
    from sampling_harness.kernels.meta import baseline

    STATED = dict(must_fail={"cpu": {"smoke": ("fit_curated",)}})

    @baseline("softmax of probs, as a buggy engine ships it", **STATED)
    def double_softmax(probs, seed):
        g = torch.Generator().manual_seed(seed)
        q = torch.empty(probs.shape, dtype=torch.float64).exponential_(generator=g)
        p = torch.softmax(probs.double(), -1) * (probs > 0)
        return (p / q).argmax(-1)

    @baseline("a correct sampler stated to fail", **STATED)
    def correct(probs, seed):
        g = torch.Generator().manual_seed(seed)
        q = torch.empty(probs.shape, dtype=torch.float64).exponential_(generator=g)
        return (probs.double() / q).argmax(-1)
''')


@pytest.fixture
def baselines(tmp_path):
    path = tmp_path / "baselines.py"
    path.write_text(KERNELS)
    return path


def test_failing_as_stated_passes_the_run(tmp_path, baselines):
    code, output, report = cli("check", "sample", "--kernel", f"{baselines}:double_softmax",
                               "--device", "cpu", "--budget", "smoke", "-k", "test_fit_curated",
                               report_dir=tmp_path / "r")
    assert code == 0, output[-3000:]
    [check] = report["checks"]
    assert (check["verdict"], check["expected"], check["role"]) == ("fail", "fail", "baseline")
    assert report["verdict"] == "pass"
    summary = (tmp_path / "r" / "summary.md").read_text()
    assert "fail (as stated)" in output and "## Baselines" in summary
    assert "sample: 0 passed, 0 failed, 0 skipped, 1 failed as stated" in output
    skipped = ET.parse(tmp_path / "r" / "junit.xml").getroot().find("testcase/skipped")
    assert skipped is not None and "failed as stated" in skipped.get("message")


def test_passing_a_check_stated_to_fail_fails_the_run(tmp_path, baselines):
    code, output, report = cli("check", "sample", "--kernel", f"{baselines}:correct",
                               "--device", "cpu", "--budget", "smoke", "-k", "test_fit_curated",
                               report_dir=tmp_path / "r")
    assert code == 1, output[-3000:]
    assert report["checks"][0]["verdict"] == "pass" and report["verdict"] == "fail"
    assert "not as stated" in (tmp_path / "r" / "summary.md").read_text()
    assert "fit_curated: pass (stated: fail) in " in output      # with its message
    assert "fit_curated: pass (stated: fail)\n    reproduce: " in output  # the summary's
