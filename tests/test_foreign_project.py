"""The plugin as a guest: another project's pytest, in the same environment, is left alone.

Installed beside an engine, the harness's pytest11 plugin is loaded by every pytest run of
that environment. A foreign two-file project whose conftest adds the options ML projects
commonly add (``--device``, ``--kernel``, ``--budget``, ``--seed``), a ``kernel`` fixture and
a ``gpu`` mark of its own must start, pass, and see ``os.environ`` unchanged: no
TRITON_INTERPRET (its Triton kernels would silently run in the interpreter), no NCCL setting.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CONFTEST = '''
import json
import os

import pytest

AT_IMPORT = dict(os.environ)         # the environment when pytest imported this conftest


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu")
    parser.addoption("--kernel", default="theirs")
    parser.addoption("--budget", type=int, default=1)
    parser.addoption("--seed", type=int, default=0)


@pytest.fixture
def environ_at_import():
    return AT_IMPORT


@pytest.fixture
def kernel(request):                 # a fixture name the harness's checks use too
    return request.config.getoption("kernel")
'''

TESTS = '''
import json
import os

import pytest

RUNTIME = {"PYTEST_CURRENT_TEST", "PYTEST_VERSION"}    # pytest's own


def _env(env=os.environ):
    return {k: v for k, v in env.items() if k not in RUNTIME}


def test_their_options_and_environment(request, environ_at_import):
    assert request.config.pluginmanager.has_plugin("sampling_harness")   # loaded, inert
    assert request.config.getoption("harness_kernel") == []
    options = [request.config.getoption(n) for n in ("device", "kernel", "budget", "seed")]
    assert options == ["cuda:1", "mine", 3, 7]
    assert _env() == _env(environ_at_import)
    with open("given-env.json") as given:               # the environment the run was given
        assert _env() == _env(json.load(given))
    for name in ("TRITON_INTERPRET", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST"):
        assert name not in os.environ, name


def test_their_kernel_fixture(kernel):
    assert kernel == "mine"


@pytest.mark.gpu
def test_their_gpu_mark_is_theirs():
    pass                             # not skipped by the harness on a machine without a GPU
'''

HARNESS_SET = ("TRITON_INTERPRET", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
               "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")


def test_a_foreign_suite_starts_passes_and_keeps_its_environment(tmp_path):
    project = tmp_path / "their-project"
    project.mkdir()
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_theirs.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if k not in HARNESS_SET}
    (project / "given-env.json").write_text(json.dumps(env))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--trace-config",
         "--device", "cuda:1", "--kernel", "mine", "--budget", "3", "--seed", "7"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "3 passed" in output, output[-4000:]
    assert "harness/run/plugin.py" in output or "sampling_harness.run.plugin" in output  # loaded
    assert not (project / "reports").exists()     # no report directory of the harness's


def test_collecting_the_harness_suites_selects_the_harness(tmp_path):
    """No --harness-* option, but the run collects the harness's own suites: the plugin
    starts its session there (and only there), announcing the checks it collected."""
    env = {k: v for k, v in os.environ.items() if k not in HARNESS_SET}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs",
         "sampling_harness.suites.sample", "--collect-only", "-q",
         "-p", "no:cacheprovider", "-k", "test_validity"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "sampling-harness: " in output and " checks, budget quick" in output, output[-4000:]
    assert (tmp_path / "reports").is_dir()
