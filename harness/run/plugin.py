"""The pytest plugin: options, kernel parametrisation, the false-fail budget, verdicts, reports.

One run = one pytest session. Suite modules mark their family (``pytest.mark.family``); each
check is a test taking the ``check`` fixture, which runs a check function against one kernel
and records its verdict. The family declares its checks (``sampling_harness.families.Check``): from
that declaration the plugin marks the statistical ones (``pytest.mark.statistical``) and those
that need a GPU (``pytest.mark.gpu``: skipped on a CPU run, still counted in the budget
split); a check function the family does not declare stops the run. Nothing here knows a
family: each comes from ``sampling_harness.families``.

A guest in other people's pytest: installed beside an engine, the plugin is loaded by every
pytest run of that environment. It adds only ``--harness-*`` options, and it stays inert
(no environment variable written, no report directory made, no process group, no test
skipped or parametrised) until the run selects harness checks: a ``--harness-*`` option
given, or the collection of the harness's suites (``activate``). Only then does it set what
the harness needs (``harness_environment``: the Triton interpreter on a machine without a
GPU, NVLink multicast off), register its marks and start its session.

Scale-out: ``--harness-gpus N`` spreads the checks over N pytest-xdist workers, one GPU each,
their verdicts merged into one report (``sampling_harness.scale.xdist_gpus``); under torchrun every
rank
runs the selection and the sharded checks split their draws
(``sampling_harness.scale.distributed``).
Either way a check's verdict rides on its test report (``user_properties``) to the one
process that writes the reports (``sampling_harness.run.session``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sampling_harness.budgets import BUDGET_NAMES
from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES
from sampling_harness.report.writers import append_step_summary
from sampling_harness.run.check_context import CheckContext
from sampling_harness.run.runner import resolve_device, use_triton_interpreter_without_gpu
from sampling_harness.run.sanitize import TOOLS, require_tool
from sampling_harness.run.session import HarnessSession, finished
from sampling_harness.scale import distributed, durations, precompile, schedule, xdist_gpus
from sampling_harness.stats.multiple import DEFAULT_FAMILY_ALPHA

SESSION = pytest.StashKey["HarnessSession"]()
DEFAULT_SEED = 20261122
SUITES = Path(__file__).resolve().parent.parent / "suites"   # the harness's own suites
# every option's destination and default: a value other than its default selects the harness
DEFAULTS = {"harness_kernel": [], "harness_device": "auto", "harness_budget": "quick",
            "harness_seed": DEFAULT_SEED, "harness_report_dir": None,
            "harness_call_timeout": 600.0, "harness_family_alpha": DEFAULT_FAMILY_ALPHA,
            "harness_statistical_checks": None, "harness_sanitize": None, "harness_gpus": None,
            "harness_workers_per_gpu": None}


def pytest_addoption(parser):
    group = parser.getgroup("sampling-harness", "sampling-harness (its checks only)")
    add = group.addoption
    add("--harness-kernel", action="append", default=[], metavar="TARGET",
        help="kernel under test: registered name, pkg.module:attr or file.py:attr "
             "(repeatable; default: every registered clean kernel of the family)")
    add("--harness-device", default="auto", choices=("auto", "cpu", "cuda"))
    add("--harness-budget", default="quick", help=" | ".join(BUDGET_NAMES))
    add("--harness-seed", type=int, default=DEFAULT_SEED)
    add("--harness-report-dir", default=None, help="default: reports/<timestamp>/")
    add("--harness-call-timeout", type=float, default=600.0,
        help="seconds one kernel call may take before it counts as hung")
    add("--harness-family-alpha", type=float, default=DEFAULT_FAMILY_ALPHA,
        help="false-fail budget of the whole run, split across its checks")
    add("--harness-statistical-checks", type=int, default=None, metavar="N",
        help="split the false-fail budget as if the run had N statistical checks "
             "(reproducing one check of a larger run; default: count them)")
    add("--harness-sanitize", default=None, choices=TOOLS,
        help="re-run each family's validity checks under compute-sanitizer (GPU only)")
    add("--harness-gpus", type=int, default=None, metavar="N",
        help="spread the checks over N pytest-xdist workers, one GPU each (on a CPU run, "
             "N workers on the CPU); see docs/scale-out.md")
    add("--harness-workers-per-gpu", type=int, default=None, metavar="W",
        help="W pytest-xdist workers share each GPU; see docs/scale-out.md")


def harness_environment(env=None):
    """What the harness's own processes need in their environment (default: this process's,
    inherited by every child and xdist worker): Triton's interpreter where torch sees no GPU
    (before triton is first imported; an explicit setting wins), NVLink multicast off."""
    use_triton_interpreter_without_gpu(env)
    return distributed.multicast_off(env)


def _in_suites(path) -> bool:
    real = Path(os.path.realpath(path))
    return real == SUITES or SUITES in real.parents


def selected(config) -> bool:
    """The run selects the harness: one of its options is given (a value other than the
    default), or it was already activated."""
    return SESSION in config.stash or any(
        config.getoption(dest) != default for dest, default in DEFAULTS.items())


def activate(config) -> HarnessSession:
    """The run selects harness checks: set the harness's environment and start its session
    (once). A run that never gets here is left as it was."""
    state = config.stash.get(SESSION, None)
    if state is not None:
        return state
    harness_environment()
    config.addinivalue_line("markers", "family(name): the kernel family a suite module checks")
    config.addinivalue_line("markers", "statistical: a check that spends part of the run's "
                                       "false-fail budget")
    config.addinivalue_line("markers", "gpu: a check that runs on a CUDA device only")
    config.addinivalue_line("markers", "many_shapes: a check whose batches bring many shapes "
                            "(started first by xdist workers)")
    state = config.stash[SESSION] = HarnessSession(config)
    config.pluginmanager.register(state, "sampling-harness-session")
    if getattr(getattr(state, "device", None), "type", None) == "cuda":
        precompile.settle_cache_keys()       # one Triton cache key per variant in every process
    if state.controller and xdist_gpus.workers(config) > 1:   # total, order
        config.pluginmanager.register(xdist_gpus.Controller(state), "sampling-harness-xdist")
    if xdist_gpus.is_worker(config):
        xdist_gpus.share_gpu_memory(config, getattr(state, "device", None))
    if state.sanitize:
        try:
            require_tool(state.sanitize, state.device)
        except HarnessError as exc:
            pytest.exit(str(exc), returncode=2)
    return state


def _state(config) -> HarnessSession | None:
    return config.stash.get(SESSION, None)


def _is_check(item) -> bool:
    return "check" in getattr(item, "fixturenames", ()) and \
        item.get_closest_marker("family") is not None


def pytest_configure(config):
    config.pluginmanager.register(_Watch(config), "sampling-harness-watch")
    if selected(config):
        activate(config)


class _Watch:
    """Activates the harness when the run turns out to select its checks: its suites being
    collected, or (an xdist controller of a plain ``-n`` run) a verdict arriving."""

    def __init__(self, config):
        self.config = config

    def pytest_collectstart(self, collector):
        if SESSION not in self.config.stash and _in_suites(collector.path):
            activate(self.config)

    def pytest_runtest_logreport(self, report):
        if SESSION not in self.config.stash and xdist_gpus.unpack(report) is not None:
            activate(self.config).pytest_runtest_logreport(report)   # registered too late


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``--harness-gpus N``: N pinned xdist workers (before xdist reads its options)."""
    if config.getoption("harness_gpus") is not None \
            or config.getoption("harness_workers_per_gpu") is not None:
        try:
            device = resolve_device(config.getoption("harness_device"))
        except HarnessError as exc:
            raise pytest.UsageError(str(exc)) from None
        xdist_gpus.configure(config, device.type)


def pytest_unconfigure(config):
    state = _state(config)
    if state is not None and state.owns_group:
        distributed.shutdown()


def pytest_generate_tests(metafunc):
    if "kernel" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("family")
    if marker is None:
        if _in_suites(metafunc.definition.path):
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: suite module has no "
                                    f"family mark")
        return      # another project's `kernel`: not ours
    kernels = activate(metafunc.config).kernels(marker.args[0])
    metafunc.parametrize("kernel", kernels, ids=[k.name for k in kernels])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Count the statistical checks before any -k/-m deselection, so a check keeps the same
    alpha whether it runs alone (to reproduce it) or with its whole run."""
    state = _state(config)
    if state is None:
        return
    _mark_as_declared(items)
    if hasattr(config, "workerinput"):
        schedule.for_workers(items, durations.load(state.device.type, state.budget),
                             int(config.workerinput.get("workercount", 1)),
                             durations.measured(state.device.type, state.budget))
    state.statistical_checks = state.pinned_checks or sum(
        _is_check(item) and item.get_closest_marker("statistical") is not None
        for item in items)
    if state.sanitize:
        keep, drop = [], []
        for item in items:
            marker = item.get_closest_marker("family")
            name = getattr(item, "originalname", item.name).removeprefix("test_")
            sanitized = marker is not None and name in FAMILIES[marker.args[0]].sanitize_checks
            (keep if sanitized else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep


def _mark_as_declared(items) -> None:
    """Mark each collected check as its family declares it (statistical, GPU only); a check
    function that the family does not declare, or declares in another file, is a usage
    error: its alpha share and its device could only be guessed."""
    for item in items:
        marker = item.get_closest_marker("family")
        if marker is None or "check" not in getattr(item, "fixturenames", ()):
            continue
        name = getattr(item, "originalname", item.name).removeprefix("test_")
        try:
            declared = FAMILIES[marker.args[0]].check(name)
        except HarnessError as exc:
            raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
        if item.path.name != declared.file:
            raise pytest.UsageError(f"{item.nodeid}: family {marker.args[0]!r} declares check "
                                    f"{name!r} in {declared.file}, not {item.path.name}")
        for mark, on in (("statistical", declared.statistical), ("gpu", declared.gpu),
                         ("many_shapes", declared.many_shapes)):
            if on and item.get_closest_marker(mark) is None:
                item.add_marker(mark)


def pytest_collection_finish(session):
    state = _state(session.config)
    if state is not None:
        state.collected([item.nodeid for item in session.items if _is_check(item)])


def pytest_runtest_setup(item):
    state = _state(item.config)
    if state is not None and item.get_closest_marker("gpu") is not None and _is_check(item):
        if state.device.type != "cuda":
            kernel = item.callspec.params["kernel"]
            item.user_properties.append((xdist_gpus.LINE, (
                f"{kernel.family} / {kernel.name} / "
                f"{item.originalname.removeprefix('test_')}: skipped (GPU only)")))
            pytest.skip("this check runs on a GPU only")


def pytest_report_teststatus(report, config):
    """No progress dots for checks: each prints its own line (``HarnessSession.progress``);
    other tests keep pytest's."""
    state = _state(config)
    if state is not None and report.nodeid in state.checks and (
            report.when == "call" or report.skipped and report.when == "setup"):
        if hasattr(report, "wasxfail"):
            return "xfailed", "", "XFAIL"
        return report.outcome, "", report.outcome.upper()
    return None


def pytest_sessionfinish(session, exitstatus):
    """Final write: ``complete`` is false when the run was interrupted or broke down."""
    state = _state(session.config)
    if state is not None and state.writes and (state.verdicts or state.checks):
        state.write(complete=finished(exitstatus))
        append_step_summary(state.report_dir / "summary.md")
    if state is not None and state.writes and not state.sanitize:   # the next run's order
        durations.remember(state.device.type, state.budget,
                           {nodeid: verdict.duration for nodeid, verdict in state.verdicts})


@pytest.fixture
def check(request, kernel) -> CheckContext:
    return CheckContext(activate(request.config), kernel, request.node)


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

