"""Run-wide state of one harness run (one pytest session): options resolved once, the
verdicts so far, where and by whom reports are written (see ``HarnessSession``)."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
import torch

from sampling_harness.device import resolve_device
from sampling_harness.errors import HarnessError
from sampling_harness.families import declaring_files
from sampling_harness.families.registry import Kernel, default_kernels, load
from sampling_harness.options import RunOptions
from sampling_harness.report.writers import writable, write_all
from sampling_harness.run.terminal import one_line, summary_lines
from sampling_harness.scale import distributed, memory, xdist_gpus
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.verdict import Verdict
from sampling_harness.words import counted


class HarnessSession:
    """Run-wide state: options resolved once, the verdicts so far, where reports go.

    Who writes the reports: a one-process run; under pytest-xdist the controller (workers
    run the checks and send their verdicts, ``sampling_harness.scale.xdist_gpus``); under torchrun
    rank 0
    (every rank runs the selection, ``sampling_harness.scale.distributed``)."""

    def __init__(self, config: pytest.Config, options: RunOptions):
        """``options``: the run's, built once from ``config`` (``plugin.run_options``)."""
        self.rootpath = config.rootpath
        self.worker = xdist_gpus.is_worker(config)
        self.controller = xdist_gpus.distributing(config)
        self.workers = len(config.getoption("tx", None) or ()) if self.controller else None
        try:
            self.device = resolve_device(options.device)
            launch = distributed.launch_env()
            options = options.resolve(torchrun=launch is not None, plugin=True,
                                      xdist=self.worker or self.controller)
            self.shard = distributed.SINGLE
            self.owns_group = False
            if launch is not None:
                self.owns_group = not distributed.initialized()
                self.shard = distributed.init(launch, self.device.type, options.call_timeout)
                if self.device.type == "cuda":
                    self.device = torch.device("cuda", launch.local_rank)
        except HarnessError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.writes = not self.worker and self.shard.rank == 0
        per_gpu = options.workers_per_gpu or 1
        # bytes one check's calls may use (harness/scale/memory.py): resolved once, by the
        # process that starts the workers (xdist hands its options to them), the same on
        # every rank of a torchrun
        if options.memory_budget is None:
            options = replace(options, memory_budget=distributed.agree(
                memory.default_budget(self.device, per_gpu), self.shard))
        self.options = options                          # every value checked by its parser
        self.budget: str = options.budget
        self.targets: tuple[str, ...] = options.kernel
        self.harness_seed: int = options.seed
        self.call_timeout: float = options.call_timeout
        self.family_alpha: float = options.family_alpha
        self.sanitize: str | None = options.sanitize
        self.memory_budget: int = options.memory_budget
        # what the run was granted on its device in all: the most one call may take (a check
        # with a fixed batch larger than its share borrows; admission turns a clash into a
        # turn alone on the GPU)
        self.memory_pool: int = self.memory_budget * per_gpu
        # the terminal: each check once, on its numbered line, and the harness's summary;
        # pytest's own sections of the checks only when asked (-v, --harness-pytest-output)
        self.quiet = options.pytest_output != "full" and (config.option.verbose or 0) <= 0
        self.pinned_checks: int | None = options.statistical_checks
        self.report_dir = Path(options.report_dir or distributed.agree(
            Path("reports") / datetime.now().strftime("%Y%m%d-%H%M%S"), self.shard))
        try:
            if self.writes:
                writable(self.report_dir)
        except HarnessError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.statistical_checks = 0
        self.verdicts: list[tuple[str, Verdict]] = []   # (node id, verdict), as they finish
        self.checks: set[str] = set()             # node ids of the collected checks
        self.order: dict[str, int] = {}           # node id -> place in the collection
        self.settled: set[str] = set()            # checks with a verdict, or skipped
        self.done = 0                             # checks finished
        self.numbers: dict[str, str] = {}         # node id -> its numbered line's "[n/N]"
        self.skipped: list[tuple[str, dict]] = []  # (node id, ``skip_record``), as they skip
        self.plugins = config.pluginmanager
        self.started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.clock = time.perf_counter()
        self._kernels: dict[str, list[Kernel]] = {}

    def kernels(self, family: str) -> list[Kernel]:
        if family not in self._kernels:
            try:
                targets = self.targets or default_kernels(family, self.device.type)
                self._kernels[family] = [load(t, family) for t in targets]
            except HarnessError as exc:
                raise pytest.UsageError(str(exc)) from None
        return self._kernels[family]

    @property
    def check_alpha(self) -> float:
        return bonferroni(self.family_alpha, max(1, self.statistical_checks))

    def meta(self, complete: bool) -> dict:
        unfinished = sorted(self.checks - self.settled, key=lambda n: self.order.get(n, 0))
        return {"budget": self.budget, "device": str(self.device),
                "harness_seed": self.harness_seed, "family_alpha": self.family_alpha,
                "statistical_checks": self.statistical_checks, "started": self.started,
                "memory_budget": self.memory_budget,
                "seconds": round(time.perf_counter() - self.clock, 1),   # the run's, so far
                "families": sorted({v.family for _, v in self.verdicts}),
                "complete": complete and not unfinished, "not_finished": unfinished,
                "selected": len(self.checks) or None, "skipped": self.skipped_records(),
                "finished": len(self.verdicts) + len(self.skipped),
                **({"workers": self.workers} if (self.workers or 0) > 1 else {}),
                **({"world_size": self.shard.world} if self.shard.world > 1 else {})}

    def ordered(self) -> list[Verdict]:
        """The verdicts in the selection's order (as a one-process run lists them)."""
        inf = len(self.order)
        return [v for _, v in sorted(self.verdicts, key=lambda nv: self.order.get(nv[0], inf))]

    def skipped_records(self) -> list[dict]:
        """The skipped checks' records (``skip_record``), in the selection's order."""
        inf = len(self.order)
        return [r for _, r in sorted(self.skipped, key=lambda nr: self.order.get(nr[0], inf))]

    def write(self, complete: bool = False) -> None:
        """Rewrite the reports (after each check: ``complete`` false, the run is going on);
        the last write of a run that stopped before any verdict still says INCOMPLETE."""
        if self.writes and (self.verdicts or self.checks and not complete):
            write_all(self.report_dir, self.ordered(), self.meta(complete))

    def collected(self, nodeids: list[str]) -> None:
        """The checks of the run, in order (a one-process run's collection, or the ids an
        xdist worker collected)."""
        self.checks = set(nodeids)
        self.order = {nodeid: i for i, nodeid in enumerate(nodeids)}
        terminal = self.plugins.get_plugin("terminalreporter")
        if terminal is not None and self.checks and not self.worker:
            spread = (f", over {self.workers} workers" if (self.workers or 0) > 1 else
                      f", sharded over {self.shard.world} ranks" if self.shard.world > 1 else "")
            terminal.write_line(
                f"sampling-harness: {counted(len(self.checks), 'check')}, budget {self.budget}, "
                f"device {self.device}, harness seed {self.harness_seed}{spread}"
                + (f", under compute-sanitizer {self.sanitize}" if self.sanitize else ""))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """(A hook.) A check that skipped: its record (``skip_record``) rides on its report,
        to whoever writes the reports (an xdist controller has no items)."""
        report = yield
        if report.skipped and not hasattr(report, "wasxfail") and \
                getattr(item, "check", None) is not None and item.nodeid in self.checks:
            report.user_properties.append((SKIP, skip_record(item, report, self.sanitize)))
        return report

    def said(self, report) -> bool:
        """The harness's own lines say what this check's report says (a verdict or a skip:
        its numbered line with the reason, a failure's reproduce command in the summary), so
        pytest shows nothing of it (no letter, FAILURES section, short-summary line or count),
        unless asked: ``-v``, ``--harness-pytest-output full``."""
        return self.quiet and (report.skipped or any(
            name == xdist_gpus.VERDICT for name, _ in report.user_properties or ()))

    def pytest_runtest_logreport(self, report) -> None:
        """(A hook: the session is registered as a plugin.) Record the verdict a check's
        report carries (from this process or an xdist worker) and write the reports; one
        numbered line per check that finished, was skipped, or never finished."""
        if self.worker:
            return
        carried = xdist_gpus.unpack(report) if report.when == "call" else None
        if carried is not None:
            verdict, self.statistical_checks = carried
            self.verdicts.append((report.nodeid, verdict))
            self.settled.add(report.nodeid)
            self.write()
            stated = "" if verdict.expected == "pass" else (
                " (as stated)" if verdict.as_expected else f" (stated: {verdict.expected})")
            reason = "" if verdict.verdict == "pass" and verdict.as_expected else \
                f": {one_line(verdict.message)}"
            self.progress(f"{verdict.family} / {verdict.kernel} / {verdict.name}: "
                          f"{verdict.verdict}{stated} in {verdict.duration:.1f} s{reason}",
                          report.nodeid)
        elif report.skipped and report.when in ("setup", "call") and \
                report.nodeid in self.checks:
            self.settled.add(report.nodeid)
            record = _skipped(report, self.rootpath)
            self.skipped.append((report.nodeid, record))
            self.progress(xdist_gpus.line(report) or f"{record['family']} / {record['kernel']} "
                          f"/ {record['name']}: skipped ({record['reason']})", report.nodeid)
        elif report.failed and report.when in ("setup", "???") and report.nodeid in self.checks:
            why = "its worker crashed" if report.when == "???" else "an error before it ran"
            self.progress(f"{report.nodeid}: did not finish ({why})")

    def progress(self, line: str, nodeid: str | None = None) -> None:
        """One line per finished check, numbered, on pytest's terminal (instead of dots;
        written from the report hooks, where pytest does not capture output)."""
        self.done += 1
        width = len(str(len(self.checks)))
        total = f"/{len(self.checks)}" if self.checks else ""   # unknown under a plain -n
        number = f"[{self.done:{width}d}{total}]"
        if nodeid is not None:
            self.numbers[nodeid] = number
        terminal = self.plugins.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.ensure_newline()
            terminal.write_line(f"{number} {line}")

    def pytest_terminal_summary(self, terminalreporter, exitstatus) -> None:
        """(A hook.) The compact end of the run (``sampling_harness.run.terminal``), written by the
        process that writes the reports; the full table is in summary.md. pytest's count line
        is left out where it would count no test (``said``: "4 deselected in 2.1s"): the
        harness's first line says the run's count and seconds."""
        if terminalreporter.config.option.collectonly or not (self.verdicts or self.checks):
            return
        if self.quiet and not any(reports for category, reports in terminalreporter.stats.items()
                                  if category not in ("", "deselected", "warnings")):
            terminalreporter.summary_stats = _nothing
        if not self.writes:
            return
        meta = self.meta(finished(exitstatus))
        numbers = {(v.family, v.kernel, v.name): self.numbers[nodeid]
                   for nodeid, v in self.verdicts if nodeid in self.numbers}
        terminalreporter.ensure_newline()
        for line in summary_lines(self.ordered(), meta, meta["skipped"], self.report_dir,
                                  numbers, tracebacks=not self.quiet):
            terminalreporter.write_line(line)


SKIP = "sampling_harness_skip"    # user property: a skipped check's record (``skip_record``)


def skip_reason(report) -> str:
    """Why pytest skipped a test: its ``pytest.skip`` reason, without pytest's prefix."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 \
        else longrepr
    return one_line(str(reason or "")).removeprefix("Skipped: ") or "skipped"


def skip_record(item, report, sanitize: str | None = None) -> dict:
    """A skipped check as report.json lists it under ``skipped`` (docs/reference/
    report-json.md): the ``name``, ``family``, ``kernel``, ``target``, ``role`` and ``check``
    of its verdict, had it run, and the ``reason`` it was skipped."""
    kernel, check = item.kernel, item.check.name
    return {"name": f"{check}_{sanitize}" if sanitize else check, "family": kernel.family,
            "kernel": kernel.name, "target": kernel.target, "role": kernel.role,
            "check": check, "reason": skip_reason(report)}


def _skipped(report, rootpath: Path) -> dict:
    """The record of a skipped check: the one its report carries, else what its node id
    says (the family whose declaring module it was collected from)."""
    record = next((value for name, value in report.user_properties or () if name == SKIP), None)
    if record is not None:
        return record
    path = (rootpath / report.nodeid.split("::")[0]).resolve()
    family = next((name for name, file in declaring_files().items() if file == path), "?")
    test = report.nodeid.split("::", 1)[-1]
    check, _, kernel = test.partition("[")
    check = check.removeprefix("test_")
    return {"name": check, "family": family, "kernel": kernel.removesuffix("]"),
            "target": kernel.removesuffix("]"), "role": "kernel", "check": check,
            "reason": skip_reason(report)}


def _nothing() -> None:
    pass


def finished(exitstatus) -> bool:
    """pytest ran the whole selection (some checks may have failed): not interrupted, not
    broken down."""
    return exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
