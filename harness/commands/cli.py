"""sampling-harness: a thin front over pytest (selection, JUnit and plugins come free).

Exit codes: 0 every check passed; 1 a check failed (the kernel raised, hung, broke its
contract or failed a test); 2 the harness could not run (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys

from sampling_harness import options
from sampling_harness.families import FAMILIES, family_names
from sampling_harness.families.registry import ROLES, entries, missing_peers
from sampling_harness.options import Parser, RunOptions, positive
from sampling_harness.run import check_command
from sampling_harness.run.check_command import guarded, known_family, report_dir_of, said


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
    parser = Parser(prog="sampling-harness", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check_command.add_arguments(sub.add_parser(
        "check", help="run the checks of a family (or all) against kernels"))
    listing = sub.add_parser("list", help="families, kernels and mutants")
    listing.add_argument("family", nargs="?", choices=family_names(),
                         help="only this family (default: every family)")
    bench = sub.add_parser("bench", help="time kernels of a family (GPU)")
    bench.add_argument("family", choices=family_names())
    options.add_to_argparse(bench, ("kernel", "device"), kernel={
        "help": "time this kernel beside the family's own kernels and baselines (repeatable)"})
    bench.add_argument("--shape", action="append", default=[], metavar="SHAPE",
                       help="sample: BxV; rejection, draft-probs: BxKxV; logprobs: "
                            "BxVxK[:top|random]; sample-logits: BxV[:filter] (repeatable)")
    bench.add_argument("--ids", action="append", default=[], metavar="IDS",
                       help="logprobs: requested ids top | random (repeatable; default both)")
    options.add_to_argparse(bench, ("report_dir",))
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


def program() -> int:
    """``sampling-harness`` as a program (the console script, ``python -m``): ``main`` of
    its arguments, in a process the harness owns (``run.heap``)."""
    from sampling_harness.run import heap

    heap.own_process()
    return main()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)       # --help and usage errors: no torch imported

    def run() -> int:
        if args.command == "check":
            known_family(args.family)
        return guarded(lambda: _dispatch(args))
    return said(run)


def _dispatch(args) -> int:
    """Run the subcommand ``args`` names; its exit code."""
    if args.command == "list":
        return run_list(args.family)
    if args.command == "bench":
        from sampling_harness.bench.command import BenchOptions, run_bench
        return run_bench(BenchOptions.from_args(args, report_dir_of(args.report_dir)))
    if args.command == "simulate":
        from sampling_harness.commands.simulate import run_simulate
        return run_simulate(args, report_dir_of(args.report_dir))
    if args.command == "reproduce":
        from sampling_harness.commands.reproduce import run_reproduce
        return run_reproduce(args, report_dir_of(args.report_dir))
    if args.command == "compare":
        from sampling_harness.commands.compare import run_compare
        return run_compare(args)
    if args.command == "selftest":
        from sampling_harness.commands.selftest import run_selftest
        return run_selftest(args, report_dir_of(args.report_dir))
    if args.command == "mutate":
        from sampling_harness.commands.mutate import run_mutate
        return run_mutate(args, report_dir_of(args.report_dir))
    if args.command == "calibrate":
        from sampling_harness.commands.calibrate import run_calibrate
        return run_calibrate(args, report_dir_of(args.out))
    return check_command.run_check(args.family, RunOptions.from_namespace(args))


if __name__ == "__main__":
    sys.exit(main())
