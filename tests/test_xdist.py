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

from sampling_harness.commands.cli import main
from sampling_harness.errors import HarnessError
from sampling_harness.options import RunOptions
from sampling_harness.scale import xdist_gpus

pytest.importorskip("xdist")

SELECTION = "test_tail or test_fit_generated or test_independence"
KERNEL = '''
import os, signal, torch

def dies_once(probs, seed):
    """The float64 race, but the first call of the run kills its process: the flag's
    exclusive creation picks that call, however close the workers' first calls come."""
    try:
        os.close(os.open(os.environ["HARNESS_TEST_FLAG"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        pass
    else:
        os.kill(os.getpid(), signal.SIGKILL)
    g = torch.Generator().manual_seed(seed)
    noise = torch.empty(probs.shape, dtype=torch.float64).exponential_(generator=g)
    return probs.double().div(noise).argmax(dim=-1)
'''


def test_two_workers_merge_into_the_one_process_report_and_fail_only_a_crashed_check(
        tmp_path):
    """The first kernel call of the spread run kills its worker: that check FAILs with the
    cause (a kernel fault), a fresh worker takes its place, and the others are merged into
    one report equal to a one-process run's (same alpha split, statistics, order); exit 1.
    (One spread run does both: starting workers is most of the cost.)"""
    kernel = tmp_path / "dies.py"
    kernel.write_text(KERNEL)
    env = {**os.environ, "HARNESS_TEST_FLAG": str(tmp_path / "flag")}
    args = [sys.executable, "-m", "sampling_harness", "check", "sample", "--kernel",
            f"{kernel}:dies_once", "--budget", "smoke", "--device", "cpu", "-k", SELECTION]
    spread = subprocess.run([*args, "--gpus", "2", "--report-dir", str(tmp_path / "spread")],
                            capture_output=True, text=True, env=env, timeout=600)
    single = subprocess.run([*args, "--gpus", "1", "--report-dir", str(tmp_path / "single")],
                            capture_output=True, text=True, env=env, timeout=600)
    assert single.returncode == 0, single.stdout[-3000:] + single.stderr[-2000:]
    assert spread.returncode == 1, spread.stdout[-3000:] + spread.stderr[-2000:]
    assert "sampling-harness: FAIL (3 checks" in spread.stdout
    assert "Traceback" not in spread.stderr
    merged, one = (json.loads((tmp_path / run / "report.json").read_text())
                   for run in ("spread", "single"))
    assert merged["complete"] is True and merged["workers"] == 2
    assert (merged["verdict"], one["verdict"]) == ("fail", "pass")
    crashed = [c for c in merged["checks"] if c["verdict"] == "fail"]
    assert len(crashed) == 1 and crashed[0]["message"].startswith(
        "kernel fault: the process was killed by SIGKILL (Killed) in a kernel call (probs [")
    kept = sorted((c for c in one["checks"] if c["name"] != crashed[0]["name"]),
                  key=lambda c: c["name"])
    others = sorted((c for c in merged["checks"] if c is not crashed[0]),
                    key=lambda c: c["name"])
    assert len(kept) == 2 and [c["name"] for c in others] == [c["name"] for c in kept]
    assert merged["statistical_checks"] == one["statistical_checks"] == 5
    for check, reference in zip(others, kept, strict=True):
        for key in ("verdict", "alpha", "statistic", "p_value", "samples", "seed", "reproduce"):
            assert check[key] == reference[key], (check["name"], key)
        assert check["alpha"] == pytest.approx(1e-4 / 5)
    suite = ET.parse(tmp_path / "spread" / "junit.xml").getroot()
    assert int(suite.get("failures")) == 1
    summary = (tmp_path / "spread" / "summary.md").read_text()
    assert "over 2 pytest-xdist workers" in summary and "kernel fault" in summary
    assert "pytest-xdist workers" in (tmp_path / "spread" / "report.html").read_text()


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
    monkeypatch.setenv("TRITON_CACHE_MANAGER", "theirs:Manager")     # the user's is kept
    assert xdist_gpus.worker_specs(2, "cuda", count=3) == [
        "popen//env:CUDA_VISIBLE_DEVICES=4", "popen//env:CUDA_VISIBLE_DEVICES=6"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert xdist_gpus.worker_specs(2, "cuda", count=2)[1] == "popen//env:CUDA_VISIBLE_DEVICES=1"
    assert xdist_gpus.worker_specs(2, "cpu") == ["popen", "popen"]


def test_gpu_workers_share_one_compile_per_variant(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.delenv("TRITON_CACHE_MANAGER", raising=False)
    lock = "TRITON_CACHE_MANAGER=sampling_harness.scale.compile_lock:LockingCacheManager"
    assert xdist_gpus.worker_specs(1, "cuda", count=1, per_gpu=2) == [
        f"popen//env:{lock}//env:CUDA_VISIBLE_DEVICES=0"] * 2
    assert xdist_gpus.worker_specs(1, "cpu", per_gpu=2) == ["popen"] * 2   # nothing compiles


def test_workers_share_a_gpu(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setenv("TRITON_CACHE_MANAGER", "theirs:Manager")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert xdist_gpus.worker_specs(2, "cuda", count=2, per_gpu=2) == [
        f"popen//env:CUDA_VISIBLE_DEVICES={gpu}" for gpu in (0, 0, 1, 1)]
    assert xdist_gpus.worker_specs(1, "cpu", per_gpu=3) == ["popen"] * 3
    with pytest.raises(HarnessError, match="must be >= 1"):
        xdist_gpus.worker_specs(1, "cuda", count=1, per_gpu=0)
    config = _config(harness_workers_per_gpu=4)
    xdist_gpus.configure(config, RunOptions.from_pytest(config), "cpu")
    assert len(config.option.tx) == 4 and config.option.dist == "worksteal"


def _config(**options):
    """A pytest config of these options (``--harness-isolation none``: one process unless
    workers are asked for)."""
    values = {"harness_gpus": None, "harness_workers_per_gpu": None, "numprocesses": None,
              "harness_isolation": "none", "tx": [], "dist": "no", **options}
    return SimpleNamespace(option=SimpleNamespace(**values),
                           getoption=lambda name, default=None: values.get(name, default))


def test_gpus_and_n_do_not_mix():
    with pytest.raises(pytest.UsageError, match="not both"):
        config = _config(harness_gpus=2, numprocesses=2)
        xdist_gpus.configure(config, RunOptions.from_pytest(config), "cpu")
    config = _config(harness_gpus=2)
    xdist_gpus.configure(config, RunOptions.from_pytest(config), "cpu")
    assert len(config.option.tx) == 2 and config.option.dist == "worksteal"


def test_workers_start_the_many_shape_checks_of_kernels_under_test_first():
    """Items in collection order: a baseline's check, a kernel's many-shape check, a
    baseline's many-shape check, a kernel's check, a kernel's many-shape check; then two
    kernels' many-shape checks (x, x, y). Workers order them many-shape first, in each part
    kernels under test before baselines, the kernels taking turns, otherwise as collected."""
    from types import SimpleNamespace

    from sampling_harness.scale.schedule import many_shapes_first

    def item(name, many, role, kernel=None):
        marker = object() if many else None
        return SimpleNamespace(name=name, get_closest_marker=lambda mark: marker,
                               kernel=SimpleNamespace(role=role, name=kernel or name))

    items = [item("a", False, "baseline"), item("b", True, "kernel"),
             item("c", True, "baseline"), item("d", False, "kernel"), item("e", True, "kernel")]
    many_shapes_first(items)
    assert [i.name for i in items] == ["b", "e", "c", "d", "a"]
    items = [item(f"x{i}", True, "kernel", "x") for i in range(2)] + [item("y", True, "kernel")]
    many_shapes_first(items)
    assert [i.name for i in items] == ["x0", "y", "x1"]
