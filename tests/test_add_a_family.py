"""docs/how-to/add-a-family.md is true: its code is the worked family ``coin`` of
docs/examples/external_package, and that package, installed outside the repository, adds
the family with no change to the harness.

* every block the how-to marks ``<!-- file: PATH -->`` is the package's file PATH verbatim,
  every file of the family is shown, and the block marked ``<!-- part of: pyproject.toml -->``
  is in the package's pyproject.toml;
* installed with pip (into a target directory put on PYTHONPATH: this environment's registry
  is left as it was), the how-to's commands do what it says: ``list`` shows the family, its
  kernel and its mutants; ``check coin`` passes; the mutant ``tempered-twice`` fails
  ``test_fit`` (exit 1) with alpha, samples and minimum detectable effect stated;
  ``selftest coin`` passes, each mutant caught.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HOW_TO = ROOT / "docs" / "how-to" / "add-a-family.md"
EXAMPLE = ROOT / "docs" / "examples" / "external_package"
MARKED = re.compile(r"^<!-- (file|part of): (\S+) -->\n```\w*\n(.*?)^```$", re.M | re.S)
FAMILY_FILES = ["src/mysampler/flip.py", *sorted(
    str(p.relative_to(EXAMPLE)) for p in (EXAMPLE / "src" / "mysampler" / "coin").glob("*.py"))]

LIST = ["list"]
CHECK = ["check", "coin", "--budget", "smoke", "--device", "cpu"]
MUTANT = ["check", "coin", "--kernel", "tempered-twice", "--budget", "smoke", "--device", "cpu",
          "-k", "test_fit"]
SELFTEST = ["selftest", "coin", "--device", "cpu"]


def marked_blocks() -> list[tuple[str, str, str]]:
    """(kind, path, text) of every marked code block of the how-to."""
    return MARKED.findall(HOW_TO.read_text(encoding="utf-8"))


def test_the_how_to_shows_the_example_files():
    blocks = marked_blocks()
    shown = [(path, text) for kind, path, text in blocks if kind == "file"]
    assert sorted(path for path, _ in shown) == sorted(FAMILY_FILES)
    for path, text in shown:
        assert text == (EXAMPLE / path).read_text(encoding="utf-8"), f"{path} differs"
    parts = [(path, text) for kind, path, text in blocks if kind == "part of"]
    assert [path for path, _ in parts] == ["pyproject.toml"]
    assert parts[0][1] in (EXAMPLE / "pyproject.toml").read_text(encoding="utf-8")
    text = HOW_TO.read_text(encoding="utf-8")
    for command in (LIST, CHECK, MUTANT, SELFTEST):     # what the tests below run
        assert "sampling-harness " + " ".join(command) in text, command


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(environment with the package on PYTHONPATH, a working directory outside the
    repository)."""
    root = tmp_path_factory.mktemp("add-a-family")
    project = root / "mysampler"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("*.egg-info", "build",
                                                                     "__pycache__"))
    site = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(site),
                           str(project)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    work = root / "work"
    work.mkdir()
    return env, work


def harness(args, installed, *more) -> tuple[int, str]:
    env, work = installed
    done = subprocess.run([sys.executable, "-m", "sampling_harness", *args, *more], env=env,
                          cwd=work, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_list_shows_the_family_its_kernel_and_mutants(installed):
    code, output = harness(LIST, installed)
    assert code == 0, output[-3000:]
    lines = output.splitlines()
    assert any(line.startswith("family coin: fn(probs: float32 [B, 2]") for line in lines)
    for role, name, where in (("kernel", "my-coin", "mysampler: mysampler.flip:flip"),
                              ("mutant", "tempered-twice", "family coin: "
                                                           "mysampler.coin.mutants:"),
                              ("mutant", "unseeded", "family coin: mysampler.coin.mutants:")):
        assert any(line.split()[:2] == [role, name] and where in line for line in lines), name


@pytest.mark.long(40)
def test_check_passes_the_kernel_and_the_fit_check_catches_the_mutant(installed, tmp_path):
    code, output = harness(CHECK, installed, "--report-dir", str(tmp_path / "clean"))
    assert code == 0 and "coin: 2 passed, 0 failed" in output, output[-3000:]
    code, output = harness(MUTANT, installed, "--report-dir", str(tmp_path / "mutant"))
    assert code == 1, output[-3000:]
    (fit,) = json.loads((tmp_path / "mutant" / "report.json").read_text())["checks"]
    assert (fit["kernel"], fit["name"], fit["verdict"]) == ("tempered-twice", "fit", "fail")
    assert fit["alpha"] == pytest.approx(1e-4) and fit["samples"] > 0
    assert 0 < fit["min_detectable_effect"] <= 0.05 and "P(heads)" in fit["effect"]


@pytest.mark.long(55)
def test_selftest_passes(installed, tmp_path):
    code, output = harness(SELFTEST, installed, "--report-dir", str(tmp_path / "s"))
    assert code == 0, output[-3000:]
    assert "coin / tempered-twice: caught" in output and "coin / unseeded: caught" in output
