"""The pytest plugin: options, kernel parametrisation, the false-fail budget, verdicts, reports.

One run = one pytest session. Suite modules mark their family (``pytest.mark.family``); each
check is a test taking the ``check`` fixture, which runs a check function against one kernel
and records its verdict. The family declares its checks (``harness.families.Check``): from
that declaration the plugin marks the statistical ones (``pytest.mark.statistical``) and those
that need a GPU (``pytest.mark.gpu``: skipped on a CPU run, still counted in the budget
split); a check function the family does not declare stops the run. Nothing here knows a
family: each comes from ``harness.families``.

A guest in other people's pytest: installed beside an engine, the plugin is loaded by every
pytest run of that environment. It adds only ``--harness-*`` options, and it stays inert
(no environment variable written, no report directory made, no process group, no test
skipped or parametrised) until the run selects harness checks: a ``--harness-*`` option
given, or the collection of the harness's suites (``activate``). Only then does it set what
the harness needs (``harness_environment``: the Triton interpreter on a machine without a
GPU, NVLink multicast off), register its marks and start its session.

Scale-out: ``--harness-gpus N`` spreads the checks over N pytest-xdist workers, one GPU each,
their verdicts merged into one report (``harness.xdist_gpus``); under torchrun every rank
runs the selection and the sharded checks split their draws (``harness.distributed``).
Either way a check's verdict rides on its test report (``user_properties``) to the one
process that writes the reports (``harness.session``).
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import pytest
import torch

from harness import distributed, durations, precompile, schedule, xdist_gpus
from harness.budgets import BUDGET_NAMES, MAX_CALL_ELEMENTS
from harness.errors import HarnessError, KernelFailure
from harness.families import FAMILIES
from harness.loader import Kernel
from harness.progress import CheckProgress
from harness.registry import expectation
from harness.reports import append_step_summary
from harness.runner import (
    Runner,
    after_freeing,
    derive_seed,
    resolve_device,
    seed_stream,
    use_triton_interpreter_without_gpu,
)
from harness.sanitize import TOOLS, require_tool, run_under_tool
from harness.session import HarnessSession, finished
from harness.stats.multiple import DEFAULT_FAMILY_ALPHA
from harness.verdict import Outcome, Verdict

SESSION = pytest.StashKey["HarnessSession"]()
DEFAULT_SEED = 20261122
CHECK_OOM_WAITS = (5.0, 15.0, 30.0)   # seconds before each re-run of a check whose harness
# work ran out of the memory of a GPU that other workers share (CheckContext._attempts)
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


class CheckContext:
    """What a check function sees: the kernel's runner, the budget, its seed and its alpha."""

    _progress: CheckProgress | None = None

    def __init__(self, state: HarnessSession, kernel: Kernel, node: pytest.Item):
        self.state = state
        self.kernel = kernel
        self.check_name = node.originalname.removeprefix("test_")
        self.sanitize = state.sanitize
        self.name = f"{self.check_name}_{self.sanitize}" if self.sanitize else self.check_name
        self.statistical = node.get_closest_marker("statistical") is not None
        self.family = FAMILIES[kernel.family]
        self.budget = self.family.budgets[state.budget]
        self.device = state.device
        self.alpha = state.check_alpha if self.statistical else None
        self.seed = derive_seed(state.harness_seed, kernel.family, self.check_name)
        self.max_call_elements = MAX_CALL_ELEMENTS[self.device.type]
        self.runner = Runner(kernel, self.device, state.call_timeout, shared_gpu=(
            self.device.type == "cuda"
            and (node.config.getoption("harness_workers_per_gpu") or 1) > 1))
        self.expectation = expectation(kernel.meta, self.check_name, self.device.type,
                                       state.budget)
        self.config = node.config
        self.node = node
        self.shard = state.shard      # this process's part of a sharded check
        self.check_retries = 0        # re-runs after the harness ran out of a shared GPU's memory

    def plan(self, draws: int) -> None:
        """The check is about to make ``draws`` draws: the progress bar's total (and ETA)."""
        if self._progress is not None:
            self._progress.plan(draws)

    def seeds(self):
        """Kernel seeds of a check run whole (the same on every rank of a torchrun)."""
        return seed_stream(self.seed)

    def rank_seeds(self):
        """Kernel seeds of this rank's share of a sharded check (``harness.distributed``):
        the check's own stream in one process, an independent stream per rank otherwise."""
        return seed_stream(self.shard.seed(self.seed))

    def reproduce(self) -> str:
        """The command that re-runs this check alone with the same bits and alpha (under
        torchrun: with as many ranks, on any number of nodes)."""
        s = self.state
        launcher = ["sampling-harness"] if self.shard.world == 1 else [   # the same W ranks
            "torchrun", "--nproc-per-node", str(self.shard.world), "-m", "harness.cli"]
        args = [*launcher, "check", self.kernel.family, "--kernel", self.kernel.target,
                "--device", self.device.type, "--budget", s.budget,
                "--seed", str(s.harness_seed)]
        if s.statistical_checks:    # the alpha split of this run, whatever -k selects
            args += ["--statistical-checks", str(s.statistical_checks)]
        args += ["-k", f"test_{self.check_name}"]
        if s.family_alpha != DEFAULT_FAMILY_ALPHA:
            args += ["--family-alpha", repr(s.family_alpha)]
        return shlex.join(args + (["--sanitize", self.sanitize] if self.sanitize else []))

    def sanitized(self) -> Outcome:
        """This check of this kernel, re-run in a child process under compute-sanitizer, at
        the smoke budget whatever the run's (every edge case, few draws: the tool slows
        each memory access by orders of magnitude)."""
        args = ["--pyargs", f"suites.{self.family.suite}", "-q",
                "-p", "no:cacheprovider", "-k", f"test_{self.check_name}",
                "--harness-kernel", self.kernel.target, "--harness-device", "cuda",
                "--harness-budget=smoke", *self.state.call_args]
        directory = (self.state.report_dir / "sanitize" /
                     f"{self.kernel.family}-{self.kernel.name}-{self.check_name}")
        return run_under_tool(self.sanitize, args, directory)

    def _verdict(self, outcome: Outcome, state: str, seconds: float) -> Verdict:
        effects = self.runner.side_effects
        if effects:    # isolated (harness.isolation), and said once in the message
            outcome.message += (f" (isolated: the kernel {'; '.join(effects)}; settings "
                                f"restored after each call)")
            outcome.details["side_effects"] = effects
        if self.check_retries:
            outcome.message += (f" (run {self.check_retries + 1} times: the harness ran out of "
                                f"the memory of the GPU that other workers share)")
            outcome.details["check_retries"] = self.check_retries
        if self.runner.oom_retries:
            outcome.message += (f" ({self.runner.oom_retries} calls retried after running out "
                                f"of the memory of the GPU that other workers share)")
            outcome.details["oom_retries"] = self.runner.oom_retries
        return Verdict(
            name=self.name, family=self.kernel.family, kernel=self.kernel.name,
            target=self.kernel.target, check=self.check_name, verdict=state,
            statistic=outcome.statistic, p_value=outcome.p_value, alpha=outcome.alpha,
            samples=outcome.samples, min_detectable_effect=outcome.min_detectable_effect,
            effect=outcome.effect, seed=self.seed, duration=round(seconds, 3),
            device=str(self.device), message=outcome.message, reproduce=self.reproduce(),
            details={**outcome.details, "kernel_calls": self.runner.calls,
                     "kernel_draws": self.runner.draws,
                     "kernel_seconds": round(self.runner.seconds, 3),
                     "guard_seconds": round(self.runner.guard_seconds, 3)},
            role=self.kernel.role, expected=self.expectation.verdict, why=self.expectation.why)

    def _settle(self, verdict: Verdict) -> Verdict:
        """The run's verdict of this check: rank 0's under torchrun (every rank the same; a
        rank that concluded otherwise says so on its stderr), put on the test's report for
        whoever writes the reports."""
        own, verdict = verdict, distributed.agree(verdict, self.shard)
        if (own.verdict, own.message) != (verdict.verdict, verdict.message):
            print(f"sampling-harness: rank {self.shard.rank}: {own.kernel} / {own.name}: "
                  f"{own.verdict} here ({own.message}); rank 0's {verdict.verdict} taken",
                  file=sys.stderr)
        self.node.user_properties.append(
            xdist_gpus.pack(verdict, self.state.statistical_checks, self.state.worker))
        return verdict

    def _attempts(self, check_fn) -> Outcome:
        """``check_fn(self)``, run again (it is seeded: the same batches, the same verdict)
        when the harness's own work runs out of the memory of a GPU that other workers
        share, after CHECK_OOM_WAITS seconds; a kernel's own out-of-memory is the runner's
        (``Runner.call``, an ``OutOfMemoryFailure``)."""
        def counted() -> None:
            self.check_retries += 1

        return after_freeing(lambda: check_fn(self),
                             CHECK_OOM_WAITS if self.runner.shared_gpu else (),
                             torch.OutOfMemoryError, counted)

    def run(self, check_fn) -> Verdict:
        """Run ``check_fn(self) -> Outcome``; record the verdict; fail the test if it failed."""
        started = time.perf_counter()
        if self.sanitize:
            check_fn = CheckContext.sanitized
        self._progress = CheckProgress(self.config, f"{self.kernel.name} / {self.name}")
        self.runner.on_draws = self._progress.update
        try:
            outcome = self._attempts(check_fn)
            state = "pass" if outcome.passed else "fail"
        except KernelFailure as exc:
            outcome = Outcome(passed=False, message=f"kernel {exc}", alpha=self.alpha)
            state = "fail"
        except Exception as exc:
            outcome = Outcome(passed=False, message=f"harness error: {type(exc).__name__}: {exc}")
            verdict = self._settle(self._verdict(outcome, "error", time.perf_counter() - started))
            if verdict.verdict == "error":
                raise
            state = None
        finally:
            self._progress.close()
        if state is not None:
            verdict = self._settle(self._verdict(outcome, state, time.perf_counter() - started))
        state = verdict.verdict
        if not verdict.as_expected:
            expected = f" (expected to fail: {verdict.why})" if verdict.expected == "fail" else ""
            pytest.fail(f"{self.kernel.name} / {self.name}: {state}{expected}: "
                        f"{verdict.message}\nreproduce: {verdict.reproduce}", pytrace=False)
        if state == "fail":
            pytest.xfail(f"{self.kernel.name} / {self.name}: failed as stated ({verdict.why})")
        return verdict


@pytest.fixture
def check(request, kernel) -> CheckContext:
    return CheckContext(activate(request.config), kernel, request.node)


@pytest.fixture
def harness_checks(tmp_path):
    """``harness_checks(family, kernel, checks=[...], budget=...)``: run checks of the harness
    on a kernel from another project's tests (``harness.api.run_checks``, reports under the
    test's tmp_path); returns a ``RunResult`` (``.passed``, ``.verdicts``, ``.summary``)."""
    from harness.api import run_checks

    runs = iter(range(1_000_000))

    def run(family: str, kernel: str, **options):
        return run_checks(family, kernel, tmp_path / f"run-{next(runs)}", **options)

    return run

