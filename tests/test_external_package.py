"""Another project uses the harness after `pip install`: the worked example in
docs/examples/external_package is copied outside the repository, installed with pip (into a
target directory put on PYTHONPATH, so this environment's registry is left as it was), and:

* its kernel is registered by its entry point: `sampling-harness list` names it and its
  package, `sampling-harness check sample --kernel my-race` runs it;
* its own tests/ call the harness's checks through the pytest plugin (pytest11 entry point);
* `pytest --pyargs sampling_harness.suites.sample --harness-kernel mysampler.race:sample`
  runs a whole family on it.

The package also declares a family of its own, ``coin``: tests/test_add_a_family.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parent.parent / "docs" / "examples" / "external_package"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(environment with the package on PYTHONPATH, the project's copied directory)."""
    root = tmp_path_factory.mktemp("outside")
    project = root / "mysampler"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("*.egg-info", "build"))
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(site), str(project)],
                   check=True, capture_output=True, text=True, timeout=300)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return env, project


def _run(args, env, cwd, timeout=600):
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def test_entry_point_registers_the_kernel(installed, tmp_path):
    env, project = installed
    code, output = _run([sys.executable, "-m", "sampling_harness", "list"], env, project)
    assert code == 0, output
    line = next(line for line in output.splitlines() if " my-race " in line)
    assert "kernel" in line and "mysampler: mysampler.race:sample" in line
    code, output = _run([sys.executable, "-m", "sampling_harness", "check", "sample", "--kernel",
                         "my-race", "--budget", "smoke", "-k", "test_validity",
                         "--report-dir", str(tmp_path / "r")], env, project)
    assert code == 0, output[-3000:]
    assert "sample: 1 passed, 0 failed, 0 skipped" in output
    assert "my-race | validity | **pass**" in (tmp_path / "r" / "summary.md").read_text()


@pytest.mark.long(60)
def test_its_own_tests_call_the_harness(installed):
    env, project = installed
    code, output = _run([sys.executable, "-m", "pytest", "tests", "-q",
                         "-p", "no:cacheprovider"], env, project)
    assert code == 0 and "2 passed" in output, output[-3000:]


def test_pyargs_runs_a_family_on_it(installed, tmp_path):
    env, project = installed
    code, output = _run([sys.executable, "-m", "pytest", "--pyargs",
                         "sampling_harness.suites.sample", "-q", "-p", "no:cacheprovider",
                         "--harness-kernel", "mysampler.race:sample",
                         "--harness-budget", "smoke", "-k", "validity or fit_curated",
                         "--harness-report-dir", str(tmp_path / "r")], env, project)
    assert code == 0 and "sample: 2 passed, 0 failed" in output, output[-3000:]   # the harness's
    assert (tmp_path / "r" / "report.json").exists()
