"""``sampling-harness mutate FAMILY --kernel TARGET``: how much of a kernel its family's checks
see, as the share of its first-order mutants they kill, every survivor explained.

1. The source reachable from the target (harness/mutate/reach.py) and its mutation sites
   (harness/mutate/operators.py: the operator list); N of them chosen at random with the
   mutant seed (default: the harness seed), or those named by ``--only``. A mutant's id is
   the index of its site among all sites: the same source gives the same ids.
2. The original, once: the family's checks on an instrumented copy of it, recording every
   kernel call's fingerprint and the lines run (harness/mutate/coverage.py). It must pass.
3. A mutant whose line never ran is dead code and is not run. Every other one is written
   beside a copy of the reachable source (harness/mutate/workspace.py) and checked in a
   child run, in parallel over the workers, stopping at its first failing check; a
   survivor's calls are compared with the original's as they happen
   (harness/mutate/recorder.py): a gap, likely equivalent, or, for a family that draws,
   likely equivalent in law (a two-sample test at the first differing call,
   harness/mutate/law.py) (harness/mutate/classify.py).
4. report.json, summary.md, junit.xml and report.html (with the source view) in the report
   directory, rewritten after every mutant; each mutant's source, diff and run under
   ``mutants/``.

Exit codes: 0 the run finished (and the score reached ``--min-score``, where given); 1 the
score fell below ``--min-score``; 2 it could not run (the original fails a check, a target
that is not a Python function, ...). docs/how-to/mutate.md.
"""

from __future__ import annotations

import random
import shlex
import time
from pathlib import Path

from sampling_harness.errors import HarnessError
from sampling_harness.families import family_names
from sampling_harness.options import RunOptions, add_to_argparse, positive

DEFAULT_MUTANTS = 20


def add_arguments(parser) -> None:
    parser.add_argument("family", choices=family_names())
    add_to_argparse(parser, ("kernel",), kernel={
        "action": "store", "default": None, "required": True,
        "help": "the kernel to mutate: registered name, package.module:attr or "
                "path/to/file.py:attr (a Python function)"})
    add_to_argparse(parser, ("device", "budget", "select", "seed", "call_timeout",
                             "family_alpha", "memory_budget", "gpus", "workers_per_gpu"),
                    select={"help": "pytest -k selection of the family's checks that the "
                                    "original and every mutant run (default: all of them; "
                                    "a mutant only these checks can see counts)"},
                    seed={"help": "harness seed: the checks' seeds, and the choice of mutants "
                                  "unless --mutant-seed is given"},
                    call_timeout={"default": None, "help": "seconds one call of a mutant "
                                  "may take (default: 10 times the original's slowest call, "
                                  "at least 10)"},
                    gpus={"help": "run mutants on N GPUs (on a CPU: N workers)"},
                    workers_per_gpu={"help": "W mutants at once on each GPU (default on a "
                                             "GPU: half the CPU cores, at most 8)"})
    parser.add_argument("--mutants", type=positive(int), default=DEFAULT_MUTANTS, metavar="N",
                        help="how many mutants to choose at random")
    parser.add_argument("--all", action="store_true",
                        help="run every site reachable from the kernel, not a sample")
    parser.add_argument("--mutant-seed", type=int, default=None, metavar="S",
                        help="seed of the choice of mutants (default: --seed)")
    parser.add_argument("--only", action="append", default=[], metavar="ID",
                        help="run these mutants (ids as a report lists them, e.g. m0042; "
                             "repeatable) instead of a random choice")
    parser.add_argument("--run-timeout", type=positive(float), default=None, metavar="S",
                        help="seconds one mutant's run may take before it counts as killed "
                             "(default: 3 times the original's run, plus 2 minutes)")
    parser.add_argument("--min-score", type=float, default=None, metavar="PERCENT",
                        help="exit 1 when the mutation score is below this")
    parser.add_argument("--dry-run", action="store_true",
                        help="list the chosen mutants and their diffs; run nothing")
    parser.add_argument("--reach", action="store_true",
                        help="run only the original and list the lines of its @triton.jit "
                             "code that no check runs (exit 1 if any); on a CPU the "
                             "interpreter's lines, on a GPU the compiled ones")
    add_to_argparse(parser, ("report_dir",))


def choose(count: int, wanted: int, seed: int, only: list[str]) -> list[int]:
    """The indices of the mutants to run: those ``only`` names, else ``wanted`` of ``count``
    at random with ``seed`` (in increasing order)."""
    if only:
        ids = {f"m{i:04d}": i for i in range(count)}
        unknown = [name for name in only if name not in ids]
        if unknown:
            raise HarnessError(f"no mutant {', '.join(unknown)}: ids run from m0000 to "
                               f"m{count - 1:04d}")
        return sorted({ids[name] for name in only})
    return sorted(random.Random(seed).sample(range(count), min(wanted, count)))


def _workers(run: RunOptions, device) -> tuple[list[str], int]:
    """(GPUs, slots per GPU) on a GPU run; ([], workers) on a CPU run."""
    from sampling_harness.scale import xdist_gpus

    if device.type != "cuda":
        return [], (run.gpus or 1) * (run.workers_per_gpu or 1)
    gpus = xdist_gpus.visible_gpus("cuda")
    if (run.gpus or 1) > len(gpus):
        raise HarnessError(f"--gpus {run.gpus} asked for, but torch sees {len(gpus)} GPUs")
    return gpus[:run.gpus or 1], run.workers_per_gpu or xdist_gpus.default_workers(True)


def command_line(args) -> str:
    """The ``mutate`` command line that chooses the same mutants."""
    run = RunOptions.from_namespace(args)
    words = ["sampling-harness", "mutate", args.family, "--kernel", run.kernel[0], "--budget",
             run.budget, "--device", run.device, "--seed", str(run.seed)]
    words += ["-k", run.select] if run.select else []
    words += [w for name in args.only for w in ("--only", name)] if args.only else \
        ["--all"] if args.all else ["--mutants", str(args.mutants)]
    if args.mutant_seed is not None:
        words += ["--mutant-seed", str(args.mutant_seed)]
    return shlex.join(words)


def run_reach(run) -> int:
    """The reach report (harness/mutate/unreached.py): the original's run alone; 0 when every
    line of its ``@triton.jit`` code ran, else 1."""
    from sampling_harness.mutate import unreached
    from sampling_harness.report.writers import atomic_write

    original = run.record_original()
    document = unreached.report(run.found, run.sites, original["coverage"], {
        **run.meta, "seconds": round(original["run"].seconds, 1)})
    atomic_write(run.report_dir / "reach.json", unreached.to_json(document))
    atomic_write(run.report_dir / "reach.md", unreached.to_markdown(document))
    for line in unreached.terminal_lines(document):
        print(line)
    print(f"reach report: {run.report_dir}/reach.md")
    return 1 if document["unreached"] else 0


def run_mutate(args, report_dir: Path) -> int:
    from sampling_harness.device import resolve_device
    from sampling_harness.families.registry import load
    from sampling_harness.mutate import session
    from sampling_harness.mutate.reach import reach
    from sampling_harness.mutate.runs import Settings
    from sampling_harness.report.writers import writable
    from sampling_harness.scale import memory

    run = RunOptions.from_namespace(args)     # the options it shares with check
    target = run.kernel[0]
    device = resolve_device(run.device)
    kernel = load(target, args.family, command="mutate")
    if kernel.role != "kernel":
        raise HarnessError(f"{target} is a {kernel.role}: mutate takes a kernel that "
                           f"must pass every check")
    found = reach(kernel.fn)
    sites = found.sites()
    if not sites:
        raise HarnessError(f"no mutation site in the source reachable from {target}")
    if args.all and args.only:
        raise HarnessError("--all runs every site; --only names some: give one of them")
    seed = run.seed if args.mutant_seed is None else args.mutant_seed
    chosen = choose(len(sites), len(sites) if args.all else args.mutants, seed, args.only)
    gpus, per_gpu = _workers(run, device)
    budget = run.memory_budget or (memory.default_budget(device, per_gpu)
                                   if device.type == "cuda" else None)
    settings = Settings(args.family, device.type, run.budget, run.seed, run.family_alpha,
                        budget, run.call_timeout or 600.0, gpus, per_gpu, run.select)
    print(f"mutate {args.family} / {target}: {len(sites)} sites in "
          f"{len(found.units)} modules, "
          + ("the original alone (--reach)" if args.reach else
             f"{len(chosen)} mutants chosen (mutant seed {seed})") + "; "
          f"budget {run.budget} on {device.type}, {settings.workers} worker"
          f"{'s' * (settings.workers != 1)}; reports under {report_dir}/", flush=True)
    if args.dry_run:
        return session.dry_run(found, sites, chosen)
    writable(report_dir)
    if args.reach:
        return run_reach(session.MutateRun(found, sites, settings, report_dir, {
            "family": args.family, "kernel": kernel.name, "target": kernel.target,
            "budget": run.budget, "device": device.type, "harness_seed": run.seed},
            time.perf_counter()))
    started = time.perf_counter()
    meta = {"family": args.family, "kernel": kernel.name, "target": kernel.target,
            "budget": run.budget, "device": device.type, "harness_seed": run.seed,
            "mutant_seed": seed, "sites": len(sites), "chosen": len(chosen),
            "workers": settings.workers, "command": command_line(args),
            "modules": found.files(), "complete": False}
    mutants = session.MutateRun(found, sites, settings, report_dir, meta, started)
    from sampling_harness.run.stop import sigterm_stops

    with sigterm_stops(deferred=False):
        results = mutants.run(chosen, args.run_timeout, run.call_timeout)
    rate = mutants.final_score().rate
    if args.min_score is not None and rate is not None and 100 * rate < args.min_score:
        print(f"sampling-harness: the mutation score {100 * rate:.1f} % is below "
              f"--min-score {args.min_score:g}")
        return 1
    return 0 if results is not None else 2

