"""The child runs of ``mutate``: one ``check`` run of the family per kernel (the original's
instrumented copy, then each mutant), as the self-test runs its cases (a child process per
run, its report read back), in parallel over a pool of workers.

A worker is a slot: on a GPU run ``--gpus N`` x ``--workers-per-gpu W`` slots, each child
pinned to its GPU by ``CUDA_VISIBLE_DEVICES`` (GPU memory shared as by any harness runs on
one host: harness/scale/gpu_share.py; every run gets the same ``--memory-budget``, so the
mutants make the original's calls); on a CPU run N x W processes share the cores, each with
``OMP_NUM_THREADS`` = cores / workers unless set. A mutant's run stops at its first failing
check (pytest's ``-x``): one failure kills it.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from sampling_harness.errors import HarnessError
from sampling_harness.mutate import recorder
from sampling_harness.mutate.coverage import ENV_TRACE
from sampling_harness.options import cli_args
from sampling_harness.report.schema import read_report

RUNNING: set[subprocess.Popen] = set()     # the children running now


@dataclass(frozen=True)
class Settings:
    """What every child run of one ``mutate`` shares."""

    family: str
    device: str
    budget: str
    seed: int
    family_alpha: float
    memory_budget: int | None
    call_timeout: float
    gpus: list[str]            # CUDA_VISIBLE_DEVICES entries, one per slot group (GPU runs)
    per_gpu: int
    select: str | None = None  # pytest -k: the checks every child runs (None: all)

    @property
    def workers(self) -> int:
        return max(1, len(self.gpus)) * self.per_gpu


@dataclass
class ChildRun:
    """A finished child: exit code (None: timed out), seconds, its report (or None) and
    the last lines of its output."""

    code: int | None
    seconds: float
    report: dict | None
    output: str
    directory: Path

    @property
    def timed_out(self) -> bool:
        return self.code is None


def command(settings: Settings, target: str, report_dir: Path,
            call_timeout: float | None = None) -> list[str]:
    """The child's command line: ``check FAMILY --kernel TARGET`` with the run's settings."""
    from sampling_harness.options import budget_words

    return [sys.executable, "-m", "sampling_harness.mutate.child", "check", settings.family,
            *cli_args({"kernel": [target], "device": settings.device, "budget": settings.budget,
                       "seed": settings.seed, "report_dir": str(report_dir),
                       "call_timeout": call_timeout or settings.call_timeout,
                       "family_alpha": settings.family_alpha,
                       "memory_budget": budget_words(settings.memory_budget),
                       # the recorder and the probes live in this child's process: its checks
                       # run there, and a mutant's fault takes only this child down
                       "isolation": "none", "precompile": False}),
            *(["-k", settings.select] if settings.select else [])]


def environment(settings: Settings, source_root: Path, record: Path, *, slot: int,
                against: Path | None = None, original: str | None = None,
                trace: Path | None = None, stop_first: bool = False) -> dict[str, str]:
    """The child's environment: the copy's source on PYTHONPATH, the recorder's files, its
    GPU (a GPU run) or its share of the cores (a CPU run), ``-x`` for a mutant."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(source_root),
                                                    env.get("PYTHONPATH", "")) if p)
    env[recorder.ENV_RECORD] = str(record)
    for name, value in ((recorder.ENV_AGAINST, against), (recorder.ENV_ORIGINAL, original),
                        (ENV_TRACE, trace)):
        if value is not None:
            env[name] = str(value)
    if stop_first:
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} -x".strip()
    if settings.gpus:
        env["CUDA_VISIBLE_DEVICES"] = settings.gpus[slot // settings.per_gpu]
    elif "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // settings.workers))
    return env


def run_child(argv: list[str], env: dict, directory: Path, timeout: float | None) -> ChildRun:
    """Run one child; its output goes to ``directory``/run.log."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "run.log"
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
        RUNNING.add(process)
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            code = None
        except BaseException:        # Ctrl-C, SIGTERM: the child goes too
            _stop(process)
            raise
        finally:
            RUNNING.discard(process)
    seconds = time.perf_counter() - started
    try:
        report = read_report(directory / "report")
    except HarnessError:
        report = None
    text = log.read_text(encoding="utf-8", errors="replace")
    return ChildRun(code, seconds, report, text[-4000:], directory)


def _stop(process: subprocess.Popen) -> None:
    """End a child that ran past its time, and its own children (its session)."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def in_parallel(jobs: Iterable, workers: int, run: Callable[[object, int], object],
                done: Callable[[object, object], None]) -> None:
    """``run(job, slot)`` for every job on ``workers`` slots; ``done(job, result)`` in this
    thread as each ends, in the order they end."""
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(workers):
        slots.put(slot)

    def one(job):
        slot = slots.get()
        try:
            return run(job, slot)
        finally:
            slots.put(slot)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(one, job): job for job in jobs}
        try:
            for future in as_completed(futures):
                done(futures[future], future.result())
        except BaseException:        # Ctrl-C, SIGTERM, a failure: no child outlives the run
            for future in futures:
                future.cancel()
            stop_all()
            raise


def stop_all() -> None:
    """End every child still running (each with its own children)."""
    for process in list(RUNNING):
        _stop(process)
