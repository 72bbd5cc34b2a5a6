"""``sampling-harness calibrate``: false-fail rates and power over harness seeds."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from sampling_harness.commands.calibrate import (
    RUN,
    collect,
    expectation,
    fraction_below,
    ks_uniform,
    rate_interval,
    summarize,
)
from sampling_harness.commands.cli import main
from tests.helpers import cli

SMOKE = ("--budget", "smoke", "--device", "cpu", "-k", "test_independence", "--workers", "2")


def test_rate_interval_is_clopper_pearson():
    """0 of n: [0, 1 - 0.025^(1/n)]; n of n: [0.025^(1/n), 1]."""
    low, high = rate_interval(0, 3)
    assert low == 0 and high == pytest.approx(1 - 0.025 ** (1 / 3))
    low, high = rate_interval(3, 3)
    assert low == pytest.approx(0.025 ** (1 / 3)) and high == 1
    assert all(math.isnan(x) for x in rate_interval(0, 0))


def test_ks_tells_anti_conservative_from_conservative_p_values():
    uniform = [(i + 0.5) / 200 for i in range(200)]
    assert min(ks_uniform(uniform)) > 0.5
    small = [p / 10 for p in uniform]                   # anti-conservative
    assert ks_uniform(small)[0] < 1e-6
    capped = [min(1.0, 3 * p) for p in uniform]         # Bonferroni-like: conservative
    one_sided, two_sided = ks_uniform(capped)
    assert one_sided > 0.5 and two_sided < 1e-6
    assert fraction_below(uniform, 0.1) == pytest.approx(0.1) and math.isnan(ks_uniform([])[0])


def runs_frame(rows, expected="pass"):
    return pd.DataFrame([dict(zip(("seed", "check", "verdict", "p_value", "alpha"), row,
                                  strict=True), expected=expected) for row in rows])


def test_errors_are_counted_apart_and_exact_fails_flagged():
    runs = runs_frame([(1, "fit", "pass", 0.5, 0.01), (2, "fit", "error", math.nan, math.nan),
                       (3, "fit", "fail", 0.001, 0.01), (1, "validity", "pass", math.nan, None),
                       (2, "validity", "fail", math.nan, None),
                       (1, RUN, "pass", math.nan, 1e-4), (2, RUN, "error", math.nan, 1e-4),
                       (3, RUN, "fail", math.nan, 1e-4)])
    summary = summarize(runs, {"role": "kernel"}).set_index("check")
    fit = summary.loc["fit"]
    assert (fit["runs"], fit["errors"], fit["decided"], fit["fails"]) == (3, 1, 2, 1)
    assert fit["alpha"] == 0.01 and fit["rate"] == 0.5
    assert summary.loc["validity", "alpha"] == 0
    assert summary.loc["validity", "finding"] == "exact check failed a kernel"
    assert summary.loc[RUN, "finding"] == "false-fail rate above the design alpha"


def test_what_a_fail_means_follows_the_kernels_role():
    """A mutant's caught_by checks and its run are expected to fail (rate = power); a
    baseline's checks follow their recorded expectation."""
    mutant = {"role": "mutant", "caught_by": ["independence"]}
    assert [expectation(mutant, c, "pass") for c in ("independence", "tail", RUN)] == \
        ["fail", "either", "fail"]
    assert expectation({"role": "baseline"}, "tail", "fail") == "fail"
    assert expectation({"role": "kernel"}, "tail", "pass") == "pass"
    runs = runs_frame([(1, "tail", "fail", 1e-9, 0.01), (2, "tail", "pass", 0.3, 0.01)],
                      expected="fail")
    summary = summarize(runs, {"role": "baseline"})
    assert summary.loc[0, "finding"] == "stated to fail: missed in 1 of 2 runs"


def test_a_crashed_run_is_an_error_not_a_pass(tmp_path):
    crashed = tmp_path / "runs" / "seed-5"
    crashed.mkdir(parents=True)
    (crashed / "exit.json").write_text(json.dumps({"exit_code": -9}))
    (crashed / "report.json").write_text('{"verdict": "pass", "checks": [')
    runs = collect(tmp_path, [5, 6])
    assert list(runs["verdict"]) == ["error", "error"] and list(runs["check"]) == [RUN, RUN]
    assert "truncated report" in runs["message"][0]


@pytest.fixture(scope="module")
def correct(tmp_path_factory):
    out = tmp_path_factory.mktemp("calibrate")
    code, output, _ = cli("calibrate", "sample", "--kernel", "torch-fp64", "--runs", "3",
                          *SMOKE, "--out", str(out))
    assert code == 0, output
    return out, output, (out / "summary.md").read_text()   # before a resumed run rewrites it


@pytest.mark.long(40)
def test_a_correct_kernel_has_no_false_fails(correct):
    out, output, text = correct
    runs = pd.read_csv(out / "runs.csv")
    assert sorted(runs["seed"].unique()) == [1, 2, 3]
    summary = pd.read_csv(out / "summary.csv").set_index("check")
    assert summary.loc["independence", "fails"] == 0
    assert summary.loc["independence", "ci_high"] == pytest.approx(1 - 0.025 ** (1 / 3))
    assert summary.loc["independence", "alpha"] == pytest.approx(2e-5)
    assert summary.loc[RUN, "alpha"] == pytest.approx(1e-4)
    assert text in output and "N = 3 runs (harness seeds 1..3), budget `smoke`" in text
    assert "a two-sided rejection in that direction is expected and not a defect" in text


def test_a_calibration_resumes(correct):
    out, _, _ = correct
    code, output, _ = cli("calibrate", "sample", "--kernel", "torch-fp64", "--runs", "3",
                          *SMOKE, "--out", str(out))
    assert code == 0 and "3 seeds, 3 already complete, 0 to run" in output


def test_a_mutant_reads_as_power(tmp_path):
    code, output, _ = cli("calibrate", "sample", "--kernel", "shared-noise", "--runs", "2",
                          *SMOKE, "--out", str(tmp_path))
    assert code == 0, output
    summary = pd.read_csv(tmp_path / "summary.csv").set_index("check")
    assert summary.loc["independence", "rate"] == 1 and summary.loc[RUN, "rate"] == 1
    assert "kernel role: mutant, must be caught by independence" in output
    # smoke is below the mutant's budget (quick): the power it shows is not promised there
    assert "| independence | either | 2 | 0 | 2/2 | 1 | [0.158, 1] | 2e-05 |" in output


def test_below_its_budget_a_mutant_is_not_flagged():
    from sampling_harness.commands.calibrate import RUN, _findings, expectation
    meta = {"role": "mutant", "caught_by": ["tail"], "budget": "standard"}
    assert expectation({**meta, "calibrated_budget": "quick"}, "tail", "pass") == "either"
    assert expectation({**meta, "calibrated_budget": "standard"}, "tail", "pass") == "fail"
    assert expectation({**meta, "calibrated_budget": "thorough"}, RUN, "pass") == "fail"
    assert _findings("either", "mutant", 0, 16, 0.0, 2e-5, 1, 1) == \
        "power not promised at this budget"


def test_unusable_dirs_exit_2_with_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("not a directory")
    other = tmp_path / "other"
    other.mkdir()
    (other / "calibrate.json").write_text(json.dumps({"budget": "quick"}))
    for out, reason in ((tmp_path / "file" / "out", "is not writable"),
                        (other, "holds a calibration with")):
        code = main(["calibrate", "sample", "--kernel", "torch-fp64", "--runs", "2",
                     "--out", str(out)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and reason in err[0] and str(out) in err[0]
