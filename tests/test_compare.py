"""``sampling-harness compare``: two reports' checks outer-joined, changed verdicts first."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from sampling_harness.commands.cli import main
from sampling_harness.commands.compare import change, decades
from sampling_harness.report.writers import to_json
from sampling_harness.verdict import Verdict, overall

META = {"budget": "smoke", "device": "cpu", "harness_seed": 1, "family_alpha": 1e-4,
        "statistical_checks": 5, "started": "2026-01-01T00:00:00+00:00", "complete": True}


def verdict(name, state="pass", p=1.0, kernel="torch-fp64", family="sample", statistic=1.0):
    return Verdict(name=name, family=family, kernel=kernel, target=kernel, check=name,
                   verdict=state, statistic=statistic, p_value=p, alpha=2e-5, samples=1000,
                   min_detectable_effect=0.1, effect="tv", seed=7, duration=0.1, device="cpu",
                   message="", reproduce="")


def write(path, verdicts) -> str:
    meta = {**META, "families": sorted({v.family for v in verdicts})}
    path.write_text(to_json(verdicts, meta))
    assert overall(verdicts) in ("pass", "fail")
    return str(path)


def test_changed_verdicts_first_then_new_gone_and_moved_p_values(tmp_path, capsys):
    a = write(tmp_path / "a.json", [
        verdict("tail", p=0.2), verdict("validity", p=None, statistic=None),
        verdict("fit_curated", p=0.5), verdict("dropped"), verdict("independence", "fail", 1e-9)])
    b = write(tmp_path / "b.json", [
        verdict("fit_curated", "fail", 1e-6), verdict("tail", p=0.002), verdict("added"),
        verdict("validity", p=None, statistic=None), verdict("independence", p=0.3)])
    assert main(["compare", a, b, "--out", str(tmp_path / "out")]) == 0
    output = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "out" / "compare.csv")
    assert list(table["check"]) == ["fit_curated", "independence", "added", "dropped", "tail",
                                    "validity"]
    assert list(table["change"]) == ["pass->fail", "fail->pass", "new", "gone",
                                     "p-value -2.0 decades", "same verdict"]
    assert table.loc[0, "p_value_b"] == 1e-6 and table.loc[4, "decades"] == pytest.approx(-2)
    assert "| sample | torch-fp64 | fit_curated | pass -> fail | 0.5 / 1e-06 |" in output
    assert "6 checks (2 verdict changed, 1 new, 1 gone, 2 same verdict)" in output
    assert (tmp_path / "out" / "compare.md").read_text() in output


def test_a_renamed_kernel_is_matched_by_family_and_check(tmp_path, capsys):
    a = write(tmp_path / "a.json", [verdict("tail", kernel="old.py:race"),
                                    verdict("greedy", kernel="old.py:rej", family="rejection")])
    b = write(tmp_path / "b.json", [verdict("tail", "fail", 1e-7, kernel="new.py:race"),
                                    verdict("greedy", kernel="new.py:rej", family="rejection")])
    assert main(["compare", a, b]) == 0
    output = capsys.readouterr().out
    assert "matched by (family, check): each report holds one kernel per family" in output
    assert "rejection: old.py:rej -> new.py:rej; sample: old.py:race -> new.py:race" in output
    assert "| sample | old.py:race -> new.py:race | tail | pass -> fail |" in output
    assert "**new**" not in output and "**gone**" not in output


def test_several_kernels_are_matched_by_kernel(tmp_path, capsys):
    a = write(tmp_path / "a.json", [verdict("tail", kernel="k1"), verdict("tail", kernel="k2")])
    b = write(tmp_path / "b.json", [verdict("tail", kernel="k1"), verdict("tail", kernel="k3")])
    assert main(["compare", a, b]) == 0
    output = capsys.readouterr().out
    assert "matched by (family, kernel, check)" in output
    assert "| sample | k3 | tail | - -> pass |" in output and "| k2 | tail | pass -> - |" in output


def test_p_value_decades_and_change():
    assert decades(0.5, 0.005) == pytest.approx(-2) and decades(1.0, 1.0) == 0
    assert decades(0.1, 0.0) == -math.inf and math.isnan(decades(None, 0.1))
    assert change("pass", "pass", 0.0) == "p-value same"
    assert change(math.nan, "fail", math.nan) == "new"
    assert change("pass", math.nan, math.nan) == "gone"


@pytest.mark.parametrize("text,reason", [
    ("{not json", "not a JSON report"),
    ('{"verdict": "pass", "checks": [{"name": "tail"', "truncated report"),
    ('{"verdict": "pass"}', "not a sampling-harness report: no 'budget' field"),
])
def test_bad_reports_exit_2_with_one_line(tmp_path, capsys, text, reason):
    good = write(tmp_path / "good.json", [verdict("tail")])
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    for argv in (["compare", good, str(bad)], ["compare", str(bad), good]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("sampling-harness: error: ")
        assert str(bad) in err[0] and reason in err[0]


def test_an_unwritable_out_exits_2_with_one_line(tmp_path, capsys):
    a = write(tmp_path / "a.json", [verdict("tail")])
    (tmp_path / "file").write_text("a file, not a directory")
    assert main(["compare", a, a, "--out", str(tmp_path / "file" / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out' is not writable" in err[0]
