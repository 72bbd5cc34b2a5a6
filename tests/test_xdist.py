"""--gpus N: independent checks spread over N pytest-xdist workers, one merged report.

On this CPU machine the workers share the CPU; the alpha split, seeds and statistics must be
those of a one-process run of the same selection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from harness import xdist_gpus
from harness.cli import main
from harness.errors import HarnessError
from tests.helpers import cli

pytest.importorskip("xdist")

SELECTION = "test_tail or test_fit_generated or test_independence"
KERNEL = '''
import os, signal, torch
from pathlib import Path

def dies_once(probs, seed):
    """The float64 race, but the first call of the run kills its process."""
    flag = Path(os.environ["HARNESS_TEST_FLAG"])
    if not flag.exists():
        flag.write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    g = torch.Generator().manual_seed(seed)
    noise = torch.empty(probs.shape, dtype=torch.float64).exponential_(generator=g)
    return probs.double().div(noise).argmax(dim=-1)
'''


def _by_name(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def test_two_workers_merge_into_the_one_process_report(tmp_path):
    args = ("check", "sample", "--kernel", "torch-fp64", "--budget", "smoke", "--device", "cpu",
            "-k", SELECTION)
    code, output, spread = cli(*args, "--gpus", "2", report_dir=tmp_path / "spread")
    assert code == 0, output[-3000:]
    code, output, single = cli(*args, "--gpus", "1", report_dir=tmp_path / "single")
    assert code == 0, output[-3000:]
    assert spread["complete"] is True and spread["workers"] == 2 and spread["not_finished"] == []
    assert spread["statistical_checks"] == single["statistical_checks"] == 5
    assert [c["name"] for c in spread["checks"]] == [c["name"] for c in single["checks"]]
    for name, one in _by_name(single).items():
        other = _by_name(spread)[name]
        for key in ("verdict", "alpha", "statistic", "p_value", "samples", "seed", "reproduce"):
            assert other[key] == one[key], (name, key)
    assert all(c["alpha"] == pytest.approx(1e-4 / 5) for c in spread["checks"])
    suite = ET.parse(tmp_path / "spread" / "junit.xml").getroot()
    assert int(suite.get("tests")) == 3 and int(suite.get("failures")) == 0
    assert "over 2 pytest-xdist workers" in (tmp_path / "spread" / "summary.md").read_text()
    assert "pytest-xdist workers" in (tmp_path / "spread" / "report.html").read_text()


def test_a_crashed_worker_leaves_its_check_unfinished(tmp_path):
    kernel = tmp_path / "dies.py"
    kernel.write_text(KERNEL)
    env = {**os.environ, "HARNESS_TEST_FLAG": str(tmp_path / "flag")}
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "check", "sample", "--kernel", f"{kernel}:dies_once",
         "--budget", "smoke", "--device", "cpu", "-k", SELECTION, "--gpus", "2",
         "--report-dir", str(tmp_path / "r")], capture_output=True, text=True, env=env,
        timeout=600)
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-2000:]
    assert "did not finish" in done.stderr and "Traceback" not in done.stderr
    assert report["complete"] is False and len(report["not_finished"]) == 1
    lost = report["not_finished"][0]
    assert "did not finish (its worker crashed)" in done.stdout
    assert len(report["checks"]) == 2 and all(c["verdict"] == "pass" for c in report["checks"])
    assert not any(lost.split("::")[1].startswith(f"test_{c['name']}[") for c in report["checks"])
    assert lost in (tmp_path / "r" / "summary.md").read_text()


def test_gpus_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["check", "sample", "--gpus", "0"])
    assert exit_.value.code == 2 and "--gpus: must be > 0" in capsys.readouterr().err


def test_more_gpus_than_visible_is_one_line():
    with pytest.raises(HarnessError, match=r"--gpus 3 asked for, but torch sees 2 CUDA devices"):
        xdist_gpus.worker_specs(3, "cuda", count=2)


def test_each_worker_is_pinned_to_one_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6,7")
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    assert xdist_gpus.worker_specs(2, "cuda", count=3) == [
        "popen//env:CUDA_VISIBLE_DEVICES=4", "popen//env:CUDA_VISIBLE_DEVICES=6"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert xdist_gpus.worker_specs(2, "cuda", count=2)[1] == "popen//env:CUDA_VISIBLE_DEVICES=1"
    assert xdist_gpus.worker_specs(2, "cpu") == ["popen", "popen"]


def _config(**options):
    values = {"gpus": None, "numprocesses": None, "tx": [], "dist": "no", **options}
    return SimpleNamespace(option=SimpleNamespace(**values),
                           getoption=lambda name, default=None: values.get(name, default))


def test_gpus_and_n_do_not_mix():
    with pytest.raises(pytest.UsageError, match="not both"):
        xdist_gpus.configure(_config(gpus=2, numprocesses=2), "cpu")
    config = _config(gpus=2)
    xdist_gpus.configure(config, "cpu")
    assert len(config.option.tx) == 2 and config.option.dist == "load"
