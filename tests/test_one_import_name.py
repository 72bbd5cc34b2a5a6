"""One import name: installed, the project is the package ``sampling_harness`` and nothing
else, so it sits beside any other top-level package, Hugging Face's ``kernels`` (the kernel
hub that engines install) in particular.

* a wheel built from a copy of the repository holds one top-level package,
  ``sampling_harness`` (its top_level.txt says so too), with harness/, kernels/, reference/
  and suites/ mapped under it (pyproject's package-dir) and the package data;
* in a fresh virtual environment (system site-packages visible, where this project is
  installed editable) holding that wheel and a stand-in package named ``kernels``, run from
  a directory outside the repository: ``import kernels`` is the stand-in, the venv's
  ``sampling_harness`` shadows the editable one, and ``sampling-harness check sample`` runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("harness", "kernels", "reference", "suites")     # what pyproject's package-dir maps
HUB_PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "kernels"
version = "0.0.1"

[tool.setuptools]
packages = ["kernels"]
"""
PROBE = """import importlib.metadata, json, kernels, sampling_harness, sampling_harness.kernels
print(json.dumps({"hub": getattr(kernels, "HUB", None), "kernels": kernels.__file__,
                  "sampling_harness": sampling_harness.__file__,
                  "sampling_harness.kernels": sampling_harness.kernels.__file__,
                  "dist": str(importlib.metadata.distribution("sampling-harness")._path)}))
"""


def _pip(python, *args, cwd):
    done = subprocess.run([str(python), "-m", "pip", *args, "-q", "--no-deps",
                           "--no-build-isolation", "--no-index"], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel of the project, built from a copy of its sources (a build in the repository
    would leave build/ and an egg-info there)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "sampling-harness"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in SOURCES:
        shutil.copytree(ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    _pip(sys.executable, "wheel", str(source), "-w", str(root / "dist"), cwd=root)
    (built,) = (root / "dist").glob("sampling_harness-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv over the system site-packages, holding the wheel and a package named
    ``kernels`` (``HUB = True``)."""
    root = tmp_path_factory.mktemp("venv")
    hub = root / "hub"
    (hub / "kernels").mkdir(parents=True)
    (hub / "kernels" / "__init__.py").write_text('"""A stand-in for the kernel hub."""\n'
                                                 "HUB = True\n")
    (hub / "pyproject.toml").write_text(HUB_PYPROJECT)
    env = root / "env"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(env)], check=True, timeout=120)
    _pip(env / "bin" / "python", "install", str(wheel), str(hub), cwd=root)
    return env


def test_the_wheel_holds_one_top_level_package(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert archive.read(top_level).decode().split() == ["sampling_harness"]
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"sampling_harness"}
    for mapped in ("sampling_harness/__init__.py", "sampling_harness/run/plugin.py",
                   "sampling_harness/kernels/__init__.py",
                   "sampling_harness/kernels/sample/torch_race.py",
                   "sampling_harness/reference/__init__.py",
                   "sampling_harness/suites/sample/__init__.py",
                   "sampling_harness/scale/durations_measured.json"):
        assert mapped in names, mapped


def test_kernels_is_the_hub_and_the_harness_runs_beside_it(venv, tmp_path):
    outside = tmp_path / "elsewhere"           # not the repository: its kernels/ is not on
    outside.mkdir()                            # sys.path through the working directory
    assert ROOT not in outside.parents
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}   # the venv's path only
    done = subprocess.run([str(venv / "bin" / "python"), "-c", PROBE], cwd=outside, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    site = Path(found["kernels"]).parent.parent
    assert found["hub"] is True and site.is_relative_to(venv), found
    for name in ("sampling_harness", "sampling_harness.kernels", "dist"):   # the venv's copy
        assert Path(found[name]).is_relative_to(site), (name, found)        # shadows the
        assert not Path(found[name]).is_relative_to(ROOT), (name, found)    # editable one

    done = subprocess.run([str(venv / "bin" / "sampling-harness"), "check", "sample",
                           "--kernel", "torch-fp64", "--budget", "smoke", "--device", "cpu",
                           "-k", "test_validity", "--report-dir", str(tmp_path / "r")],
                          cwd=outside, env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "sample: 1 passed, 0 failed, 0 skipped" in output, output[-3000:]
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [(c["kernel"], c["name"], c["verdict"]) for c in report["checks"]] == [
        ("torch-fp64", "validity", "pass")]
