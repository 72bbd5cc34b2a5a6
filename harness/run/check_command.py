"""The ``check`` command: run the checks of a family (or all) against kernels, as a pytest
run of the plugin, and its exit code from that run and its report.

Exit codes: 0 every check passed; 1 a check failed (the kernel raised, hung, broke its
contract or failed a test); 2 the harness could not run (one line on stderr, no traceback).

The CLI (``sampling_harness.commands.cli``) parses its arguments into a ``RunOptions``
(``sampling_harness.options``) and calls ``run_check``; ``main`` runs one ``check`` command
line alone, the way the CLI does, for a child run of ``mutate``
(``sampling_harness.mutate.child``), which sits below the CLI. ``guarded`` is what every
command runs inside: the environment the harness needs, Hypothesis's files kept apart, a
``HarnessError`` said in one line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from sampling_harness import options
from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES, declaring_files, family_names
from sampling_harness.families.registry import default_kernels, entries, load
from sampling_harness.options import RunOptions
from sampling_harness.run.sanitize import require_tool
from sampling_harness.scale import precompile
from sampling_harness.words import counted, did_you_mean


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``check``'s arguments: the family (or all) and every run option of the table."""
    parser.add_argument("family", help=f"{' | '.join(family_names())} | all")
    options.add_to_argparse(parser)


def report_dir_of(given: str | Path | None) -> Path:
    """The report directory: the one given, else reports/<timestamp>/."""
    return Path(given or Path("reports") / datetime.now().strftime("%Y%m%d-%H%M%S"))


def known_family(family: str) -> None:
    """A ``HarnessError`` when ``family`` (of ``check``) is neither an installed family nor
    ``all``: from the entry points alone, so that a misspelt family is said as soon as a usage
    error is, no family (nor torch) imported."""
    names = family_names()
    if family != "all" and family not in names:
        raise HarnessError(f"unknown family {family!r}{did_you_mean(family, names)}"
                           f" (known: {', '.join(names)}, all)")


def run_check(family: str, given: RunOptions) -> int:
    """Run ``check family`` with the options ``given``; its exit code."""
    from sampling_harness.device import resolve_device
    from sampling_harness.report.writers import writable
    from sampling_harness.scale import distributed, xdist_gpus

    families = list(FAMILIES) if family == "all" else [family]
    report_dir = report_dir_of(given.report_dir)
    device = resolve_device(given.device)
    if given.sanitize:
        require_tool(given.sanitize, device)
    launch = distributed.launch_env()
    run = given.resolve(family=family, cuda=device.type == "cuda", torchrun=launch is not None)
    for name in families:
        for target in run.kernel or default_kernels(name, device.type):
            load(target, name)
            peer = getattr(entries(name).get(target), "peer", None)
            if peer is not None and device.type not in peer.devices:
                raise HarnessError(f"{target!r} runs on {', '.join(peer.devices)} only, not "
                                   f"{device.type} (--device)")
    if (run.gpus or 1) * (run.workers_per_gpu or 1) > 1:
        xdist_gpus.worker_specs(run.gpus or 1, device.type, per_gpu=run.workers_per_gpu or 1)
    shard = distributed.SINGLE if launch is None else \
        distributed.init(launch, device.type, run.call_timeout)
    report_dir = distributed.agree(report_dir, shard)
    if shard.rank == 0:
        writable(report_dir)
    declared = declaring_files()
    pytest_args = [str(declared[name]) for name in families]
    pytest_args += replace(run, report_dir=report_dir).plugin_args()
    if run.select:
        pytest_args += ["-k", run.select]

    from sampling_harness.run.guest import run_pytest

    alone = shard.world == 1 and not run.sanitize
    with precompile_ahead(run, device, families, report_dir) if alone else contextlib.nullcontext():
        code = run_pytest(pytest_args)     # only the plugins the run needs (run/guest.py)
    if shard.world == 1:
        return _conclude(code, report_dir, run.select, families)
    try:    # rank 0 reads the report and decides; every rank exits the same way
        said = (_conclude(code, report_dir, run.select, families), None) \
            if shard.rank == 0 else None
    except HarnessError as exc:
        said = (None, str(exc))
    code, error = distributed.agree(said, shard)
    if error is not None:
        raise HarnessError(error)
    return code


def precompile_ahead(run: RunOptions, device, families: list[str], report_dir: Path):
    """The precompiler beside a GPU run (harness/scale/precompile.py ``beside``), or nothing
    to do: a CPU run, ``--no-precompile`` (or nothing listed for this run: ``start`` says)."""
    if device.type != "cuda" or not run.precompile:
        return contextlib.nullcontext()
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    return precompile.beside(run.budget, [FAMILIES[f].suite for f in families],
                             list(run.kernel) or None, 10 * major + minor,
                             report_dir / "precompile.log")


def _conclude(code: int, report_dir: Path, select: str | None, families: list[str]) -> int:
    """The exit code of a finished pytest run, from its code and its report (the compact
    summary is already on the terminal: the plugin wrote it; the full table is in
    summary.md). A ``-k`` that selects nothing gets the closest check names of
    ``families``."""
    import pytest

    report = report_dir / "report.json"
    body = json.loads(report.read_text()) if report.exists() else {}
    verdict = body.get("verdict", "error")
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        raise HarnessError(f"no checks selected (-k {select!r})"
                           f"{did_you_mean(select or '', _check_names(families, select))}")
    unfinished = body.get("not_finished") or []
    if verdict == "incomplete" or unfinished or code == pytest.ExitCode.INTERRUPTED:
        finished, selected = body.get("finished", 0), body.get("selected")
        of = f"{finished} of {counted(selected, 'check')}" if selected else \
            counted(finished, "check")
        raise HarnessError(f"the run is INCOMPLETE: {of} finished (pytest exit "
                           f"{int(code)}); the report of the checks that finished is in "
                           f"{report_dir}/")
    if code == pytest.ExitCode.OK and verdict == "pass":
        return 0
    if code == pytest.ExitCode.TESTS_FAILED and verdict == "fail":
        return 1
    if code == pytest.ExitCode.OK and not report.exists():
        raise HarnessError("no check ran: every selected check was skipped")
    if verdict == "error" and report.exists():
        raise HarnessError(f"a check could not run (harness error); see {report_dir}/summary.md")
    raise HarnessError(f"the run did not complete (pytest exit {int(code)}); the report of the "
                       f"checks that finished, if any, is in {report_dir}/")


def _check_names(families: list[str], select: str | None) -> list[str]:
    """The declared checks of ``families`` as ``select`` spells them: test function names
    (``test_fit_curated``) where it starts with ``test_``, else check names."""
    test = (select or "").startswith("test_")
    return sorted({c.test_name if test else c.name for f in families for c in FAMILIES[f].checks})


HYPOTHESIS_STORAGE = "HYPOTHESIS_STORAGE_DIRECTORY"


@contextlib.contextmanager
def hypothesis_storage_elsewhere():
    """While inside, Hypothesis keeps its files (its constants cache of local modules, an
    example database a check did not turn off, observability logs) in a temporary directory
    removed on the way out, not in ``.hypothesis/`` of the working directory: by the
    environment variable, which the run's pytest, its xdist workers and its child runs
    read, and in this process too where Hypothesis has already settled on a directory. A
    ``HYPOTHESIS_STORAGE_DIRECTORY`` the user set is kept. Both restored on the way out: a
    plain pytest run in this process, or started by it afterwards, is left as it was."""
    if os.environ.get(HYPOTHESIS_STORAGE):
        yield
        return
    configuration = sys.modules.get("hypothesis.configuration")
    settled = vars(configuration).get("__hypothesis_home_directory") if configuration else None
    storage = tempfile.mkdtemp(prefix="sampling-harness-hypothesis-")
    os.environ[HYPOTHESIS_STORAGE] = storage
    if settled is not None:
        configuration.set_hypothesis_home_dir(storage)
    try:
        yield
    finally:
        os.environ.pop(HYPOTHESIS_STORAGE, None)
        configuration = sys.modules.get("hypothesis.configuration")
        if configuration is not None and hasattr(configuration, "set_hypothesis_home_dir"):
            configuration.set_hypothesis_home_dir(settled)
        shutil.rmtree(storage, ignore_errors=True)


def guarded(work: Callable[[], int]) -> int:
    """``work()``'s exit code, run as every command runs (torch comes in here): NVLink
    multicast off and Triton's interpreter without a GPU (here and in every child process),
    Hypothesis's files elsewhere (``hypothesis_storage_elsewhere``), a torchrun group shut
    down on the way out."""
    from sampling_harness.device import use_triton_interpreter_without_gpu
    from sampling_harness.scale import distributed

    distributed.multicast_off()
    use_triton_interpreter_without_gpu()
    try:
        with hypothesis_storage_elsewhere():
            return work()
    finally:
        distributed.shutdown()


def said(work: Callable[[], int]) -> int:
    """``work()``'s exit code; a ``HarnessError`` is one line on stderr and exit code 2."""
    try:
        return work()
    except HarnessError as exc:
        print(f"sampling-harness: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:         # `sampling-harness list | head`: the reader has gone
        sys.stdout = None
        return 0


def main(argv: list[str]) -> int:
    """``check FAMILY [options]`` (``argv``) run alone, as the CLI runs it: the same usage
    errors, the same exit codes."""
    parser = options.Parser(prog="sampling-harness")
    add_arguments(parser.add_subparsers(dest="command", required=True).add_parser("check"))
    args = parser.parse_args(argv)

    def check() -> int:
        known_family(args.family)
        return guarded(lambda: run_check(args.family, RunOptions.from_namespace(args)))
    return said(check)
