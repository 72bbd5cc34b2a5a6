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


# --- a guest that costs nothing: loading the plugin imports nothing heavy -------------------

HEAVY = ("torch", "numpy", "scipy", "triton", "hypothesis", "pandas", "matplotlib")
SMALL_CONFTEST = '''
import pytest


@pytest.fixture
def answer():
    return 42
'''
SMALL_TESTS = '''
def test_theirs(answer):
    assert answer == 42
'''
WITHOUT = ("-p", "no:sampling_harness")


def _small_project(tmp_path):
    project = tmp_path / "their-project"
    project.mkdir()
    (project / "conftest.py").write_text(SMALL_CONFTEST)
    (project / "test_theirs.py").write_text(SMALL_TESTS)
    return project, {k: v for k, v in os.environ.items() if k not in HARNESS_SET}


def _pytest(project, env, *args: str, importtime: bool = False):
    head = [sys.executable, "-X", "importtime"] if importtime else [sys.executable]
    done = subprocess.run([*head, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "1 passed" in done.stdout, (done.stdout + done.stderr)[-3000:]
    return done


def imported(importtime: str) -> dict[str, int]:
    """Each module of ``python -X importtime`` output -> its own import time in us."""
    found = {}
    for line in importtime.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if line.startswith("import time:") and len(fields) == 3 and fields[0].strip().isdigit():
            found[fields[2].strip()] = int(fields[0])
    return found


def test_loading_the_plugin_imports_nothing_heavy(tmp_path):
    """``python -X importtime -m pytest`` in a foreign project: no torch at all, and nothing
    heavy among the modules the plugin adds to the run (compared with ``-p
    no:sampling_harness``); those few modules (the table of run options) take under 0.2 s
    to import. ``-s``: imports made while pytest captures stderr are seen too.

    The plugin's cost is measured here from importtime, not by timing whole runs: on a
    loaded 2-core CI machine the medians of 3 (and of 9) wall-clock runs with and without
    the plugin differed by up to 0.4 s either way, while the plugin's own work is about
    50 ms (its imports, and reading the families' entry points once)."""
    project, env = _small_project(tmp_path)
    loaded = imported(_pytest(project, env, "-s", importtime=True).stderr)
    alone = imported(_pytest(project, env, "-s", *WITHOUT, importtime=True).stderr)
    assert "sampling_harness.options" in loaded, sorted(loaded)   # the plugin was loaded
    assert not [m for m in loaded if m.split(".")[0] == "torch"]
    added = {m: us for m, us in loaded.items() if m not in alone}
    assert not [m for m in added if m.split(".")[0] in HEAVY], sorted(added)
    assert not [m for m in added if m.startswith(("sampling_harness.suites.",   # a family
                                                   "sampling_harness.kernels"))], sorted(added)
    assert sum(added.values()) < 200_000, sorted(added.items(), key=lambda kv: -kv[1])[:10]


def test_the_plugin_finds_the_families_declaring_files():
    from sampling_harness.families import declaring_files
    from sampling_harness.run import plugin

    assert {name: path for path, (name, _) in plugin.declarations().items()} \
        == declaring_files()


def test_the_cli_run_loads_only_the_plugins_it_needs(tmp_path):
    """``only_own_plugins`` (the CLI's pytest run, its xdist workers and children): autoload
    off, the harness's, xdist's and Hypothesis's plugins named; the environment restored."""
    from sampling_harness.run.guest import AUTOLOAD, PLUGINS, only_own_plugins

    env = {PLUGINS: "theirs.plugin", "OTHER": "1"}
    with only_own_plugins(env) as plugins:
        assert env[AUTOLOAD] == "1"
        assert env[PLUGINS].split(",") == plugins
        assert plugins[:2] == ["theirs.plugin", "sampling_harness.run.plugin"]
    assert env == {PLUGINS: "theirs.plugin", "OTHER": "1"}

    project, env = _small_project(tmp_path)
    with only_own_plugins(env):
        done = _pytest(project, env, "--trace-config")
    registered = {line.split("'")[1] for line in done.stdout.splitlines()
                  if line.startswith("PLUGIN registered: <module '")}
    outside = {m for m in registered if not m.startswith("_pytest.")}
    assert outside <= {"sampling_harness.run.plugin", "xdist.plugin", "_hypothesis_pytestplugin",
                       "conftest", str(project / "conftest.py")}, sorted(outside)
    assert "sampling_harness.run.plugin" in outside and "xdist.plugin" in outside


def test_the_cli_hands_its_pytest_run_only_its_plugins(monkeypatch, tmp_path):
    """``sampling-harness check``: its pytest runs with autoload off and the harness's plugins
    named (inherited by its xdist workers); the environment is restored after it."""
    import pytest

    from sampling_harness.commands.cli import main
    from sampling_harness.run.guest import AUTOLOAD, PLUGINS

    before = {name: os.environ.get(name) for name in (AUTOLOAD, PLUGINS)}
    seen = {}

    def run(args):
        seen.update({name: os.environ.get(name) for name in (AUTOLOAD, PLUGINS)})
        return pytest.ExitCode.INTERNAL_ERROR

    monkeypatch.setattr(pytest, "main", run)
    assert main(["check", "sample", "--kernel", "torch-fp64", "--device", "cpu",
                 "--report-dir", str(tmp_path / "run")]) == 2
    assert seen[AUTOLOAD] == "1"
    assert "sampling_harness.run.plugin" in seen[PLUGINS].split(",")
    assert {name: os.environ.get(name) for name in (AUTOLOAD, PLUGINS)} == before
