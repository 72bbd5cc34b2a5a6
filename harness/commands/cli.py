"""sampling-harness: a thin front over pytest (selection, JUnit and plugins come free).

Exit codes: 0 every check passed; 1 a check failed (the kernel raised, hung, broke its
contract or failed a test); 2 the harness could not run (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from sampling_harness import options
from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES, declaring_files, family_names
from sampling_harness.families.loader import load
from sampling_harness.families.registry import ROLES, default_kernels, entries, missing_peers
from sampling_harness.options import positive
from sampling_harness.run.sanitize import require_tool
from sampling_harness.scale import precompile
from sampling_harness.words import counted, did_you_mean


class _Parser(argparse.ArgumentParser):
    """A usage error is one line on stderr, exit code 2 (the usage stays under ``--help``);
    an invalid choice names the closest choices and lists them all as they are typed."""

    def error(self, message: str):
        self.exit(2, f"sampling-harness: error: {message}\n")

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            choices = list(map(str, action.choices))
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}"
                                                 f"{did_you_mean(str(value), choices)} "
                                                 f"(choose from {', '.join(choices)})")


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """End the help of each option of ``parser`` with its default, where it has one worth
    showing (not None, a switch or an empty list) and its help does not already say it."""
    for action in parser._actions:
        default, text = action.default, action.help
        if text == argparse.SUPPRESS or "default" in (text or "").lower():
            continue
        if action.dest == "report_dir" and default is None:
            action.help = "default: reports/<timestamp>/"
        elif default not in (None, argparse.SUPPRESS, [], ()) and not isinstance(default, bool):
            action.help = f"{text} (default: %(default)s)" if text else "default: %(default)s"


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sampling-harness", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run the checks of a family (or all) against kernels")
    check.add_argument("family", help=f"{' | '.join(family_names())} | all")
    options.add_to_argparse(check)
    listing = sub.add_parser("list", help="families, kernels and mutants")
    listing.add_argument("family", nargs="?", choices=family_names(),
                         help="only this family (default: every family)")
    bench = sub.add_parser("bench", help="time kernels of a family (GPU)")
    bench.add_argument("family", choices=family_names())
    bench.add_argument("--kernel", action="append", default=[], metavar="TARGET",
                       help="time this kernel beside the family's own kernels and baselines "
                            "(repeatable)")
    bench.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                       help="auto: CUDA when torch sees a GPU, else the CPU")
    bench.add_argument("--shape", action="append", default=[], metavar="SHAPE",
                       help="sample: BxV; rejection, draft-probs: BxKxV; logprobs: "
                            "BxVxK[:top|random]; sample-logits: BxV[:filter] (repeatable)")
    bench.add_argument("--ids", action="append", default=[], metavar="IDS",
                       help="logprobs: requested ids top | random (repeatable; default both)")
    bench.add_argument("--report-dir", default=None)
    bench.add_argument("--cuda-graph", action="store_true",
                       help="time CUDA-graph replay of each call (launch cost apart)")
    bench.add_argument("--repeat", type=positive(int), default=3, metavar="N",
                       help="isolated repeats of each figure; the table shows their median "
                            "and min-max (default 3)")
    bench.add_argument("--calls", type=positive(int), default=None, metavar="N",
                       help="timed calls per repeat (default 50 on a GPU, 5 on a CPU)")
    bench.add_argument("--launch", action="append", default=[], metavar="KEY=V[,V...]",
                       help="time the kernels also under these launch settings (keyword "
                            "arguments of the kernel function; repeatable: the grid of all "
                            "combinations)")
    bench.add_argument("--ceiling", action="store_true",
                       help="measure the read ceiling and show each figure as its percent")
    bench.add_argument("--profile", action="store_true",
                       help="also print torch.profiler's table of each entry's eager calls "
                            "(written to bench-profile.md)")
    from sampling_harness.commands.simulate import add_arguments
    add_arguments(sub.add_parser("simulate", help="run the speculative-decoding engine"))
    from sampling_harness.commands import calibrate, compare, mutate, reproduce, selftest
    reproduce.add_arguments(sub.add_parser("reproduce", help="re-run one check of a report"))
    compare.add_arguments(sub.add_parser("compare", help="compare two reports' checks"))
    calibrate.add_arguments(sub.add_parser("calibrate", help="false-fail rate or power of a "
                                           "family's checks over many harness seeds"))
    selftest.add_arguments(sub.add_parser("selftest", help="every registered kernel must pass "
                                          "and every mutant fail the checks that catch it"))
    mutate.add_arguments(sub.add_parser("mutate", help="the share of a kernel's first-order "
                                        "mutants its family's checks kill"))
    for subparser in sub.choices.values():
        _show_defaults(subparser)
    return parser


def _report_dir(given: str | None) -> Path:
    return Path(given or Path("reports") / datetime.now().strftime("%Y%m%d-%H%M%S"))


def known_family(family: str) -> None:
    """A ``HarnessError`` when ``family`` (of ``check``) is neither an installed family nor
    ``all``: from the entry points alone, so that a misspelt family is said as soon as a usage
    error is, no family (nor torch) imported."""
    names = family_names()
    if family != "all" and family not in names:
        raise HarnessError(f"unknown family {family!r}{did_you_mean(family, names)}"
                           f" (known: {', '.join(names)}, all)")


def run_check(args) -> int:
    from sampling_harness.device import resolve_device
    from sampling_harness.report.writers import writable
    from sampling_harness.scale import distributed, xdist_gpus

    families = list(FAMILIES) if args.family == "all" else [args.family]
    if args.family == "all" and args.kernel:
        raise HarnessError("check all runs every registered kernel and baseline; name a family "
                           "to check --kernel targets")
    device = resolve_device(args.device)
    if args.sanitize:
        require_tool(args.sanitize, device)
    for family in families:
        for target in args.kernel or default_kernels(family, device.type):
            load(target, family)
            peer = getattr(entries(family).get(target), "peer", None)
            if peer is not None and device.type not in peer.devices:
                raise HarnessError(f"{target!r} runs on {', '.join(peer.devices)} only, not "
                                   f"{device.type} (--device)")
    launch = distributed.launch_env()
    if args.workers_per_gpu is None and args.family == "all" and device.type == "cuda" \
            and launch is None and not args.sanitize and not args.select:
        args.workers_per_gpu = xdist_gpus.default_workers_per_gpu()
    workers = (args.gpus or 1) * (args.workers_per_gpu or 1)
    if launch is not None and workers > 1:
        raise HarnessError("--gpus / --workers-per-gpu (pytest-xdist) and torchrun do not mix: "
                           "spread independent checks or shard one, not both")
    if launch is not None and args.sanitize:
        raise HarnessError("--sanitize does not run under torchrun")
    if workers > 1:
        xdist_gpus.worker_specs(args.gpus or 1, device.type, per_gpu=args.workers_per_gpu or 1)
    shard = distributed.SINGLE if launch is None else \
        distributed.init(launch, device.type, args.call_timeout)
    report_dir = distributed.agree(_report_dir(args.report_dir), shard)
    if shard.rank == 0:
        writable(report_dir)
    declared = declaring_files()
    pytest_args = [str(declared[family]) for family in families]
    pytest_args += options.plugin_args({**vars(args), "report_dir": report_dir})
    if args.select:
        pytest_args += ["-k", args.select]

    from sampling_harness.run.guest import run_pytest

    ahead = precompile_ahead(args, device, families, report_dir) \
        if shard.world == 1 and not args.sanitize else None
    try:    # only the plugins the run needs, in its xdist workers too (run/guest.py)
        code = run_pytest(pytest_args)
    finally:
        if ahead is not None:
            summary = precompile.stop(*ahead)
            if summary:
                print(summary)
    if shard.world == 1:
        return _conclude(code, report_dir, args.select, families)
    try:    # rank 0 reads the report and decides; every rank exits the same way
        said = (_conclude(code, report_dir, args.select, families), None) \
            if shard.rank == 0 else None
    except HarnessError as exc:
        said = (None, str(exc))
    code, error = distributed.agree(said, shard)
    if error is not None:
        raise HarnessError(error)
    return code


def precompile_ahead(args, device, families: list[str], report_dir: Path):
    """(process, log) of the precompiler started beside a GPU run (harness/scale/precompile.py),
    or None: a CPU run, ``--no-precompile``, or nothing listed for this run."""
    if device.type != "cuda" or not args.precompile:
        return None
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    log = report_dir / "precompile.log"
    process = precompile.start(args.budget, [FAMILIES[f].suite for f in families],
                               args.kernel or None, 10 * major + minor, log)
    return None if process is None else (process, log)


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


def _describe(meta: dict) -> str:
    """What ``list`` says of a registered kernel beyond its target."""
    if meta["role"] == "mutant":
        tool = f" (compute-sanitizer {meta['tool']})" if meta.get("tool") else ""
        devices = meta.get("devices", ["cpu", "cuda"])
        where = "" if set(devices) >= {"cpu", "cuda"} else f" on {', '.join(devices)}"
        gpu = meta.get("gpu_budget")
        at = meta["budget"] + (f" ({gpu} on a GPU)" if gpu and gpu != meta["budget"] else "")
        return (f"fails {', '.join(meta['caught_by'])} at {at}{where}{tool}: "
                f"{meta['bug']}")
    if meta["role"] == "baseline":
        must = "; ".join(f"must fail {', '.join(checks)} on {device} from {budget}"
                         for device, by in meta.get("must_fail", {}).items()
                         for budget, checks in by.items())
        return f"{meta['shipped_by']}" + (f"; {must}" if must else "")
    return ""


def _missing_peers_line(families) -> str | None:
    """One line naming the peers of ``families`` left unregistered and how to get them, or
    None where every peer is registered."""
    groups: dict[tuple[str, str], list[str]] = {}
    for family, peer, why in missing_peers(families):
        groups.setdefault((why, peer.install), []).append(f"{peer.name} ({family})")
    return "; ".join(f"peers not registered ({why}): {', '.join(names)}; to get them: {how}"
                     for (why, how), names in groups.items()) or None


def run_list(only: str | None = None) -> int:
    """Every registered kernel with its family, role, package and target (of family ``only``
    alone, when given); then one line naming the peers left unregistered, if any."""
    for family, spec in FAMILIES.items():
        if only is not None and family != only:
            continue
        print(f"family {family}: {spec.doc}")
        ordered = sorted(entries(family).items(),
                         key=lambda item: (ROLES.index(item[1].role), item[0]))
        for name, entry in ordered:
            about = _describe(entry.meta)
            print(f"  {entry.role:8s} {name:22s} {entry.package}: {entry.target}"
                  + (f"\n           {about}" if about else ""))
    line = _missing_peers_line([only] if only is not None else list(FAMILIES))
    if line is not None:
        print(line)
    return 0


HYPOTHESIS_STORAGE = "HYPOTHESIS_STORAGE_DIRECTORY"


@contextlib.contextmanager
def _hypothesis_storage_elsewhere():
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


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)       # --help and usage errors: no torch imported
    try:
        if args.command == "check":
            known_family(args.family)
        return _run(args)
    except HarnessError as exc:
        print(f"sampling-harness: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:         # `sampling-harness list | head`: the reader has gone
        sys.stdout = None
        return 0


def _run(args) -> int:
    """Run the parsed command line ``args``: torch comes in here."""
    from sampling_harness.device import use_triton_interpreter_without_gpu
    from sampling_harness.scale import distributed

    distributed.multicast_off()     # never NVLink multicast, here and in every child process
    use_triton_interpreter_without_gpu()
    try:
        with _hypothesis_storage_elsewhere():
            return _dispatch(args)
    finally:
        distributed.shutdown()


def _dispatch(args) -> int:
    """Run the subcommand ``args`` names; its exit code."""
    if args.command == "list":
        return run_list(args.family)
    if args.command == "bench":
        from sampling_harness.bench.command import BenchOptions, run_bench
        return run_bench(BenchOptions.from_args(args, _report_dir(args.report_dir)))
    if args.command == "simulate":
        from sampling_harness.commands.simulate import run_simulate
        return run_simulate(args, _report_dir(args.report_dir))
    if args.command == "reproduce":
        from sampling_harness.commands.reproduce import run_reproduce
        return run_reproduce(args, _report_dir(args.report_dir))
    if args.command == "compare":
        from sampling_harness.commands.compare import run_compare
        return run_compare(args)
    if args.command == "selftest":
        from sampling_harness.commands.selftest import run_selftest
        return run_selftest(args, _report_dir(args.report_dir))
    if args.command == "mutate":
        from sampling_harness.commands.mutate import run_mutate
        return run_mutate(args, _report_dir(args.report_dir))
    if args.command == "calibrate":
        from sampling_harness.commands.calibrate import run_calibrate
        return run_calibrate(args, _report_dir(args.out))
    return run_check(args)


if __name__ == "__main__":
    sys.exit(main())
