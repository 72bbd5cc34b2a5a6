"""``sampling-harness reproduce``: the recorded statistic again, or exit 1; bad reports exit 2."""

from __future__ import annotations

import json
import math

import pytest

from sampling_harness.commands.cli import main
from sampling_harness.commands.reproduce import same_value
from tests.helpers import cli


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A smoke run of two sample checks; its alpha split counts all 5 statistical checks."""
    directory = tmp_path_factory.mktemp("recorded")
    code, output, report = cli("check", "sample", "--kernel", "torch-fp64", "--device", "cpu",
                               "--budget", "smoke", "-k", "test_fit_curated or test_tail",
                               report_dir=directory)
    assert code == 0, output
    assert report["statistical_checks"] == 5
    return directory / "report.json"


def edited(recorded, tmp_path, edit) -> str:
    """A copy of the recorded report with ``edit(report)`` applied."""
    report = json.loads(recorded.read_text())
    edit(report)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(report))
    return str(path)


def test_reproduces_the_recorded_statistic(recorded, tmp_path):
    code, output, report = cli("reproduce", str(recorded), "fit_curated",
                               report_dir=tmp_path / "again")
    assert code == 0, output
    old = next(c for c in json.loads(recorded.read_text())["checks"]
               if c["name"] == "fit_curated")
    assert [c["name"] for c in report["checks"]] == ["fit_curated"]
    assert report["checks"][0]["statistic"] == old["statistic"]
    assert report["statistical_checks"] == 5 and report["budget"] == "smoke"
    assert f"statistic  {old['statistic']!r}  {old['statistic']!r}" in output
    assert "reproduced: the same statistic" in output
    assert "warnings summary" not in output and "Warning" not in output


def test_a_kernel_path_that_does_not_load_here_is_one_line_and_no_folder(recorded, tmp_path):
    """A report whose kernel is a file path, reproduced from another directory: one line
    that says where to run it from, exit 2, and no report folder left behind."""
    def edit(report):
        for check in report["checks"]:
            check["target"] = "tests/no_such_kernels.py:race"
    code, output, _ = cli("reproduce", edited(recorded, tmp_path, edit), "tail",
                          report_dir=tmp_path / "again")
    assert code == 2, output
    assert output.strip().splitlines() == [
        "sampling-harness: error: the report's kernel does not load here: kernel file "
        "'tests/no_such_kernels.py' does not exist (a path is read from the directory the run "
        "started in: reproduce from there)"]
    assert not (tmp_path / "again").exists()


def test_a_different_statistic_exits_1_and_says_how(recorded, tmp_path):
    def edit(report):
        check = next(c for c in report["checks"] if c["name"] == "tail")
        check["statistic"] *= 1.001
    code, output, _ = cli("reproduce", edited(recorded, tmp_path, edit), "tail",
                          report_dir=tmp_path / "again")
    assert code == 1, output
    assert "NOT REPRODUCED: statistic" in output and "relative 0.000999" in output


def test_selects_the_check_by_its_exact_name(recorded, tmp_path):
    """``-k test_fit`` would run fit_curated, fit_generated and fit_large_vocab: reproduce
    runs the check its family declares by that exact name, here none."""
    def edit(report):
        report["checks"][0]["name"] = report["checks"][0]["check"] = "fit"
    code, output, _ = cli("reproduce", edited(recorded, tmp_path, edit), "fit",
                          report_dir=tmp_path / "again")
    assert code == 2 and "family 'sample' declares no check 'fit' (its checks: " \
        "validity, fit_curated" in output
    assert "Traceback" not in output and not (tmp_path / "again" / "report.json").exists()


def one_error_line(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("sampling-harness: error: ")
    return err[0]


def test_an_unknown_check_lists_the_reports_checks(recorded, capsys):
    line = one_error_line(capsys, ["reproduce", str(recorded), "validity"])
    assert f"{recorded} has no check 'validity' (its checks: fit_curated, tail)" in line


def test_several_kernels_need_kernel(recorded, tmp_path, capsys):
    def edit(report):
        twin = dict(report["checks"][0], kernel="torch-fp32",
                    target="sampling_harness.kernels.sample.torch_race:race_fp32")
        report["checks"].append(twin)
    path = edited(recorded, tmp_path, edit)
    line = one_error_line(capsys, ["reproduce", path, "fit_curated"])
    assert "several kernels; name one with --kernel: torch-fp32, torch-fp64" in line
    line = one_error_line(capsys, ["reproduce", path, "fit_curated", "--kernel", "triton-exact"])
    assert "no check 'fit_curated' of kernel 'triton-exact'" in line


@pytest.mark.parametrize("damage,reason", [
    (lambda text: "<html>not a report</html>", "not a JSON report: Expecting value at line 1"),
    (lambda text: text[: len(text) // 2], "truncated report"),
    (lambda text: text[: text.index('"message"') + 12], "truncated report"),
    (lambda text: "", "the report is empty"),
    (lambda text: "[1, 2]", "not a sampling-harness report (a JSON list"),
    (lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "checks"}),
     "no 'checks' field"),
    (lambda text: text.replace('"harness_seed": 20261122', '"harness_seed": "x"'),
     "'harness_seed' is 'x'"),
    (lambda text: text.replace('"p_value"', '"p"', 1), "checks[0] has no 'p_value'"),
    (lambda text: text.replace('"verdict": "pass"', '"verdict": "maybe"', 2),
     "checks[0] has verdict 'maybe'"),
    (lambda text: text.replace('"samples": ', '"samples": "many", "x": ', 1),
     "checks[0] has samples 'many', not a number"),
])
def test_bad_reports_exit_2_with_one_line(recorded, tmp_path, capsys, damage, reason):
    path = tmp_path / "damaged.json"
    path.write_text(damage(recorded.read_text()))
    line = one_error_line(capsys, ["reproduce", str(path), "fit_curated"])
    assert str(path) in line and reason in line


def test_a_sanitized_check_needs_its_tool(recorded, tmp_path, capsys):
    def edit(report):
        report["checks"][0]["name"] = f"{report['checks'][0]['check']}_memcheck"
    line = one_error_line(capsys, ["reproduce", edited(recorded, tmp_path, edit),
                                   "fit_curated_memcheck"])
    assert "--sanitize memcheck needs a CUDA GPU" in line


def test_a_sharded_check_is_reproduced_under_torchrun_only(recorded, tmp_path, capsys):
    def edit(report):
        report["world_size"] = 2
    line = one_error_line(capsys, ["reproduce", edited(recorded, tmp_path, edit),
                                   "fit_curated"])
    assert "sharded over 2 torchrun ranks" in line and "--nproc-per-node 2" in line


def test_a_missing_report(tmp_path, capsys):
    line = one_error_line(capsys, ["reproduce", str(tmp_path / "nope.json"), "fit_curated"])
    assert "nope.json: no such report" in line


def test_same_value_is_exact_up_to_last_digits():
    assert same_value(1.0, 1.0 + 1e-12) and not same_value(1.0, 1.0 + 1e-8)
    assert same_value(None, None) and not same_value(None, 0.0) and not same_value(0.0, 1e-300)
    assert same_value("nan", math.nan) and same_value("inf", math.inf)
    assert not same_value("inf", "-inf") and not same_value(math.nan, 1.0)
