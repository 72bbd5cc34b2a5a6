"""The pytest plugin: options, the test items of declared checks, the false-fail budget,
verdicts, reports.

One run = one pytest session. The test items come from the families' declarations
(``sampling_harness.families``): the module that declares a family (the one its entry point
names) is collected as ``FamilyChecks``, which makes one ``CheckItem`` per declared check and
kernel, named ``test_<check>[<kernel>]`` and marked as declared: ``family``, ``statistical``
(it spends part of the run's false-fail budget), ``gpu`` (skipped on a CPU run, still counted
in the budget split), ``many_shapes``. Running an item runs the check's function against its
kernel (``CheckContext``) and records the verdict. Nothing here knows a family.

A guest in other people's pytest: installed beside an engine, the plugin is loaded by every
pytest run of that environment. It adds only ``--harness-*`` options, and it stays inert
(no environment variable written, no report directory made, no process group, no test
skipped or parametrised) until the run selects harness checks: a ``--harness-*`` option
given, or the collection of a family's declaration (``activate``). Only then does it set what
the harness needs (``harness_environment``: the Triton interpreter on a machine without a
GPU, NVLink multicast off), register its marks and start its session.

A light guest: loading the plugin imports only the standard library, pytest and the light
table of run options (``sampling_harness.options``): no torch, Triton, NumPy, SciPy,
Hypothesis nor family. What the harness runs with is imported inside the hooks, once the run
has selected it (or when the ``harness_checks`` fixture is used); the declaring modules'
files are found from the entry points (``declarations``; ``sampling_harness.families`` is
light to import: no family is loaded). tests/test_foreign_project.py measures it.

Scale-out: ``--harness-gpus N`` spreads the checks over N pytest-xdist workers, one GPU each,
their verdicts merged into one report (``sampling_harness.scale.xdist_gpus``); under torchrun every
rank
runs the selection and the sharded checks split their draws
(``sampling_harness.scale.distributed``).
Either way a check's verdict rides on its test report (``user_properties``) to the one
process that writes the reports (``sampling_harness.run.session``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sampling_harness.options import OPTIONS, RunOptions, add_to_pytest

if TYPE_CHECKING:
    from sampling_harness.run.session import HarnessSession

SESSION = pytest.StashKey["HarnessSession"]()
OPTIONS_KEY = pytest.StashKey[RunOptions]()


def pytest_addoption(parser):
    """The ``--harness-*`` options, from the one table of run options
    (``sampling_harness.options``)."""
    add_to_pytest(parser.getgroup("sampling-harness", "sampling-harness (its checks only)"))


def harness_environment(env=None):
    """What the harness's own processes need in their environment (default: this process's,
    inherited by every child and xdist worker): Triton's interpreter where torch sees no GPU
    (before triton is first imported; an explicit setting wins), NVLink multicast off."""
    from sampling_harness.device import use_triton_interpreter_without_gpu
    from sampling_harness.scale import distributed

    use_triton_interpreter_without_gpu(env)
    return distributed.multicast_off(env)


@cache
def declarations() -> dict[Path, tuple[str, str]]:
    """Each installed family's declaring module file -> (family name, module name), from the
    entry points, importing no family (only the packages above each module)."""
    from sampling_harness.families import FAMILY_GROUP, declaring_files

    modules = {ep.name: ep.module for ep in entry_points(group=FAMILY_GROUP)}
    return {path: (name, modules[name]) for name, path in declaring_files().items()}


def _declaring(path) -> tuple[str, str] | None:
    return declarations().get(Path(os.path.realpath(path)))


def run_options(config) -> RunOptions:
    """The run's options, built once from pytest's config (its ``--harness-*`` options) and
    kept in its stash: what the session, the hooks and xdist's set-up read."""
    if OPTIONS_KEY not in config.stash:
        config.stash[OPTIONS_KEY] = RunOptions.from_pytest(config)
    return config.stash[OPTIONS_KEY]


def hand_on(config, options: RunOptions) -> None:
    """Keep ``options`` as the run's (the session resolved some of them: the memory budget),
    also in pytest's option namespace, which xdist hands to its workers."""
    config.stash[OPTIONS_KEY] = options
    for option in OPTIONS:
        if not option.cli_only:
            value = getattr(options, option.dest)
            setattr(config.option, option.plugin_dest,
                    list(value) if option.repeatable else value)


def selected(config) -> bool:
    """The run selects the harness: one of its options is given (a value other than the
    default), or it was already activated."""
    return SESSION in config.stash or run_options(config).given()


def activate(config) -> HarnessSession:
    """The run selects harness checks: set the harness's environment and start its session
    (once). A run that never gets here is left as it was."""
    state = config.stash.get(SESSION, None)
    if state is not None:
        return state
    harness_environment()      # before the modules below import torch (and Triton)
    from sampling_harness.errors import HarnessError
    from sampling_harness.run.sanitize import require_tool
    from sampling_harness.run.session import HarnessSession
    from sampling_harness.scale import precompile, xdist_gpus

    config.addinivalue_line("markers", "family(name): the kernel family a suite module checks")
    config.addinivalue_line("markers", "statistical: a check that spends part of the run's "
                                       "false-fail budget")
    config.addinivalue_line("markers", "gpu: a check that runs on a CUDA device only")
    config.addinivalue_line("markers", "many_shapes: a check whose batches bring many shapes "
                            "(started first by xdist workers)")
    state = config.stash[SESSION] = HarnessSession(config, run_options(config))
    hand_on(config, state.options)
    config.pluginmanager.register(state, "sampling-harness-session")
    if getattr(getattr(state, "device", None), "type", None) == "cuda":
        precompile.settle_cache_keys()       # one Triton cache key per variant in every process
    if state.controller:   # total, order
        config.pluginmanager.register(xdist_gpus.Controller(state), "sampling-harness-xdist")
        if xdist_gpus.isolating(config, state.options):   # a worker that dies: its verdict
            from sampling_harness.run.crashes import Crashes

            config.pluginmanager.register(Crashes(config), "sampling-harness-crashes")
    if xdist_gpus.is_worker(config):
        xdist_gpus.share_gpu_memory(config, state.options, getattr(state, "device", None))
        folder = config.workerinput.get("sampling_harness_faults")
        if folder is not None:               # what it does, written down before it does it
            from sampling_harness.run import faults

            faults.watch(folder, config.workerinput["workerid"])
    if state.sanitize:
        try:
            require_tool(state.sanitize, state.device)
        except HarnessError as exc:
            pytest.exit(str(exc), returncode=2)
    return state


def _state(config) -> HarnessSession | None:
    return config.stash.get(SESSION, None)


def _is_check(item) -> bool:
    return isinstance(item, CheckItem)


class FamilyChecks(pytest.Module):
    """The module declaring a family, collected as that family's checks: one ``CheckItem`` per
    declared check and kernel of the run (check by check, in the declared order)."""

    def __init__(self, *, family_name: str, module_name: str, **kwargs):
        super().__init__(**kwargs)
        self.family_name, self.module_name = family_name, module_name

    def _getobj(self):
        return importlib.import_module(self.module_name)   # the registry's, never a copy

    def collect(self):
        state = activate(self.config)
        from sampling_harness.families import FAMILIES

        family = FAMILIES[self.family_name]
        kernels = state.kernels(family.name)
        for check in family.checks:
            for kernel in kernels:
                yield CheckItem.from_parent(self, name=f"{check.test_name}[{kernel.name}]",
                                            check=check, kernel=kernel)


class CheckItem(pytest.Item):
    """One declared check of one kernel: runs ``check.function`` through a ``CheckContext``,
    which gets the declared ``Check`` itself (``self.check``). The marks are for pytest's own
    selection (``-m statistical``) and xdist's schedule; the harness reads the ``Check``."""

    def __init__(self, *, check, kernel, **kwargs):
        super().__init__(**kwargs)
        self.check, self.kernel = check, kernel
        self.originalname = check.test_name
        self.add_marker(pytest.mark.family(kernel.family))
        for mark, on in (("statistical", check.statistical), ("gpu", check.gpu),
                         ("many_shapes", check.many_shapes)):
            if on:
                self.add_marker(mark)

    def runtest(self):
        from sampling_harness.run.check_context import CheckContext

        CheckContext(activate(self.config), self.kernel, self.check, self).run(
            self.check.function)

    def reportinfo(self):
        return self.path, None, f"{self.kernel.family} / {self.kernel.name} / {self.check.name}"


def pytest_collect_file(file_path, parent):
    """A family's declaring module, reached by collecting its folder (``pytest --pyargs
    sampling_harness.suites.sample``, the CLI): its checks."""
    declared = _declaring(file_path)
    if declared is None or parent.session.isinitpath(file_path):
        return None                 # named on the command line: pytest_pycollect_makemodule
    return FamilyChecks.from_parent(parent, path=file_path, family_name=declared[0],
                                    module_name=declared[1])


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    """A family's declaring module named on the command line: its checks."""
    declared = _declaring(module_path)
    if declared is None:
        return None
    return FamilyChecks.from_parent(parent, path=module_path, family_name=declared[0],
                                    module_name=declared[1])


def pytest_configure(config):
    config.pluginmanager.register(_Watch(config), "sampling-harness-watch")
    if selected(config):
        activate(config)


class _Watch:
    """Activates the harness when the run turns out to select its checks: a family's
    declaration being collected (``FamilyChecks.collect``), or (an xdist controller of a
    plain ``-n`` run) a verdict arriving."""

    def __init__(self, config):
        self.config = config

    def pytest_runtest_logreport(self, report):
        if SESSION in self.config.stash or not getattr(report, "user_properties", None):
            return                  # a verdict rides on user_properties: none, no check
        from sampling_harness.scale import xdist_gpus

        if xdist_gpus.unpack(report) is not None:
            activate(self.config).pytest_runtest_logreport(report)   # registered too late


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """A run that selects the harness by its options runs its checks in xdist workers
    (``--harness-isolation worker``, the default; ``--harness-gpus N``: N pinned workers),
    set up here, before xdist reads its options."""
    if selected(config):
        from sampling_harness.device import resolve_device
        from sampling_harness.errors import HarnessError
        from sampling_harness.scale import xdist_gpus

        try:
            device = resolve_device(run_options(config).device)
        except HarnessError as exc:
            raise pytest.UsageError(str(exc)) from None
        xdist_gpus.configure(config, run_options(config), device.type)


def pytest_unconfigure(config):
    state = _state(config)
    if state is not None and state.owns_group:
        from sampling_harness.scale import distributed

        distributed.shutdown()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Count the statistical checks before any -k/-m deselection, so a check keeps the same
    alpha whether it runs alone (to reproduce it) or with its whole run."""
    state = _state(config)
    if state is None:
        return
    from sampling_harness.scale import durations, schedule

    if hasattr(config, "workerinput"):
        schedule.for_workers(items, durations.remembered(state.device.type, state.budget),
                             int(config.workerinput.get("workercount", 1)),
                             durations.measured(state.device.type, state.budget))
    state.statistical_checks = state.pinned_checks or sum(
        _is_check(item) and item.check.statistical for item in items)
    if state.sanitize:
        keep, drop = [], []
        for item in items:
            (keep if _is_check(item) and item.check.sanitize else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep


def pytest_collection_finish(session):
    state = _state(session.config)
    if state is not None:
        state.collected([item.nodeid for item in session.items if _is_check(item)])


def pytest_runtest_setup(item):
    state = _state(item.config)
    if state is not None and _is_check(item) and item.check.gpu:
        if state.device.type != "cuda":
            from sampling_harness.scale import xdist_gpus

            kernel = item.kernel
            item.user_properties.append((xdist_gpus.LINE, (
                f"{kernel.family} / {kernel.name} / {item.check.name}: skipped (GPU only)")))
            pytest.skip("this check runs on a GPU only")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """(A worker.) After a fault that spoiled this worker, its check's verdict goes to the
    controller through the worker's file, and the worker exits (``run.faults``)."""
    report = yield
    if _is_check(item) and hasattr(item.config, "workerinput"):
        from sampling_harness.run import faults

        faults.retire_if_spoiled(item, report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    """A stop of the run (SIGINT, SIGTERM: ``run.stop``) interrupts it here, in the loop.
    The loop starts with the heap of a process the harness owns frozen (``run.heap``)."""
    if _state(session.config) is None:
        return (yield)
    from sampling_harness.run import heap
    from sampling_harness.run.stop import stop_point

    heap.freeze(worker=hasattr(session.config, "workerinput"))   # imports and items done

    with stop_point():
        return (yield)


def pytest_report_teststatus(report, config):
    """No progress dots for checks: each prints its own line (``HarnessSession.progress``);
    other tests keep pytest's. A check's verdict or skip is not pytest's to show again
    (FAILURES, short summary, count) unless asked (``HarnessSession.said``)."""
    state = _state(config)
    if state is not None and report.nodeid in state.checks and (
            report.when == "call" or report.skipped and report.when == "setup"):
        if state.said(report):
            return "", "", ""
        if hasattr(report, "wasxfail"):
            return "xfailed", "", "XFAIL"
        return report.outcome, "", report.outcome.upper()
    return None


def pytest_sessionfinish(session, exitstatus):
    """Final write: ``complete`` is false when the run was interrupted or broke down (a
    ``--collect-only`` run writes nothing)."""
    state = _state(session.config)
    if state is None or session.config.option.collectonly:
        return
    from sampling_harness.report.writers import append_step_summary
    from sampling_harness.run.session import finished
    from sampling_harness.scale import durations

    if state.writes and (state.verdicts or state.checks):
        state.write(complete=finished(exitstatus))
        append_step_summary(state.report_dir / "summary.md")
    if state.writes and not state.sanitize:   # the next run's order
        durations.remember(state.device.type, state.budget,
                           {nodeid: verdict.duration for nodeid, verdict in state.verdicts})


@pytest.fixture
def harness_checks(tmp_path):
    """``harness_checks(family, kernel, checks=[...], budget=...)``: run checks of the harness
    on a kernel from another project's tests (``sampling_harness.api.run_checks``, reports under the
    test's tmp_path); returns a ``RunResult`` (``.passed``, ``.verdicts``, ``.summary``)."""
    from sampling_harness.api import run_checks

    runs = iter(range(1_000_000))

    def run(family: str, kernel: str, **options):
        return run_checks(family, kernel, tmp_path / f"run-{next(runs)}", **options)

    return run

