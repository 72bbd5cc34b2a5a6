"""``sampling-harness selftest FAMILY|all``: the harness run on its own kernels.

Two kinds of run, each a ``sampling-harness check`` child process with its own report
directory under DIR:

* clean: one run of every registered kernel under test and every baseline of the families
  (one false-fail budget over all of them): each check must conclude as expected (a kernel
  passes everything; a baseline fails where its metadata says it must);
* mutant: each mutant narrowed to the checks its metadata names (``caught_by``), at its
  own budget, or at the one given if that is higher (power is promised from the mutant's
  budget up): every one of those checks must fail. A mutant naming a compute-sanitizer
  ``tool`` runs under it (``--sanitize``), on a GPU only; one whose ``devices`` leave this
  device out, or whose every catching check runs on a GPU only, is skipped here, with the
  reason. The mutants of one family that share a budget and a call timeout share one
  child run (a ``Batch``: each selects its own checks, ``-k "test_law[mutant]"``), since a
  child's start (torch, Triton, the suites) costs more than most mutants' checks; each
  check's share of the false-fail budget is the one of the batch's largest mutant run
  alone, never larger (a mutant caught in its batch is caught alone). A batch whose child
  dies (a mutant's fault) runs again with its checks in workers, where the fault is the
  verdict of the check it happened in.

A mutant escapes when one of its checks passes; a run that exits 2, times out, breaks off or
records an error verdict is an error. Exit 0: every clean kernel as expected and every
mutant caught; 1: a clean kernel failed, a mutant escaped, or a run erred; 2: the self-test
could not start. The table goes to the terminal and to DIR/selftest.md.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from sampling_harness.budgets import BUDGET_NAMES
from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES, family_names
from sampling_harness.families.registry import by_role, default_kernels
from sampling_harness.options import RunOptions, add_to_argparse, cli_args, positive
from sampling_harness.report.schema import read_report
from sampling_harness.words import counted

CLEAN_BUDGET = {"cpu": "smoke", "cuda": "quick"}   # every edge case of every validity check
RUN_TIMEOUT = 1800.0
DEVICES = ("cpu", "cuda")
GOOD = ("pass", "caught", "skipped")


def add_arguments(parser) -> None:
    parser.add_argument("family", help=f"{' | '.join(family_names())} | all")
    add_to_argparse(parser, ("device", "budget", "kernel"), budget={
        "default": None, "help": "clean kernels: default smoke on a CPU, quick on a GPU; "
                                 "mutants: each at its own budget (the higher of the two if "
                                 "given)"},
        kernel={"metavar": "MUTANT", "help": "run only these mutants (repeatable; no clean "
                                             "run)"})
    parser.add_argument("--run-timeout", type=positive(float), default=RUN_TIMEOUT,
                        metavar="S", help="seconds one child run may take (an error after)")
    add_to_argparse(parser, ("report_dir",))


@dataclass(frozen=True)
class Case:
    """One child run: ``sampling-harness check ARGS``; what it must conclude; or why it is
    skipped on this device."""

    family: str                  # a family, or "all" for the clean run of every family
    kernel: str                  # the mutant's name; "" for the clean run
    budget: str
    args: tuple[str, ...] = ()
    expected: dict[str, str] = field(default_factory=dict)   # mutant: verdict name -> fail
    skip: str = ""
    checks: tuple[str, ...] = ()     # mutant: the checks it runs (those that must fail)
    shared: tuple[str, ...] = ()     # mutant: the run's options but kernel and selection
    statistical: int = 0             # mutant: how many of its checks are statistical

    @property
    def role(self) -> str:
        return "mutant" if self.kernel else "clean"

    @property
    def label(self) -> str:
        return f"{self.family} / {self.kernel or 'clean kernels'}"

    @property
    def directory(self) -> str:
        return f"{self.family}-{self.kernel or 'clean'}"


def selection(checks) -> str:
    """The ``-k`` expression of these checks (test_k_selects_one_check: no name is part of
    another check's name or suite file)."""
    return " or ".join(f"test_{check}" for check in checks)


def _families(target: str) -> list[str]:
    if target != "all" and target not in FAMILIES:
        raise HarnessError(f"unknown family {target!r}; known: {', '.join(FAMILIES)}, all")
    return list(FAMILIES) if target == "all" else [target]


def clean_case(target: str, device: str, budget: str | None = None) -> Case:
    """The one run of every registered kernel and baseline of ``target`` (a family or all)."""
    budget = budget or CLEAN_BUDGET[device]
    return Case(target, "", budget, ("check", target,
                                     *cli_args({"device": device, "budget": budget})))


def mutant_case(family: str, name: str, meta: dict, device: str,
                budget: str | None = None) -> Case:
    """The run of mutant ``name`` (``meta``: its ``sampling_harness`` metadata) on its
    checks, or why it cannot be caught on ``device``."""
    own = (device == "cuda" and meta.get("gpu_budget")) or meta["budget"]
    if budget is None or BUDGET_NAMES.index(budget) < BUDGET_NAMES.index(own):
        budget = own
    tool, devices = meta.get("tool") or "", meta.get("devices") or list(DEVICES)
    gpu_only = {c.name for c in FAMILIES[family].checks if c.gpu}
    catching = [c for c in meta["caught_by"] if device == "cuda" or c not in gpu_only]
    skip = ""
    if tool and device != "cuda":
        skip = (f"caught by compute-sanitizer {tool}, on a GPU only (a stray store on a CPU "
                "may corrupt the run's own heap)")
    elif device not in devices:
        skip = f"its bug shows on {', '.join(devices)} only: {meta.get('bug', '')[:80]}"
    elif not catching:
        skip = f"caught by GPU-only checks only ({', '.join(meta['caught_by'])})"
    options = {"device": device, "budget": budget, "sanitize": tool or None,
               "call_timeout": meta.get("call_timeout") or None}
    args = ["check", family, *cli_args({"kernel": [name], **options,
                                        "select": selection(catching)})]
    expected = {check + (f"_{tool}" if tool else ""): "fail" for check in catching}
    statistical = sum(c.statistical for c in FAMILIES[family].checks if c.name in catching)
    return Case(family, name, budget, tuple(args), expected, skip, tuple(catching),
                tuple(cli_args(options)), statistical)


@dataclass(frozen=True)
class Batch:
    """Mutant cases of one family run in one child: the same budget, call timeout and
    device, no sanitizer (a sanitized mutant runs alone)."""

    cases: tuple[Case, ...]

    @property
    def args(self) -> tuple[str, ...]:
        if len(self.cases) == 1:
            return self.cases[0].args
        first = self.cases[0]
        pairs = " or ".join(f"test_{check}[{case.kernel}]" for case in self.cases
                            for check in case.checks)
        split = max(case.statistical for case in self.cases)
        return ("check", first.family, *cli_args({
            "kernel": [case.kernel for case in self.cases], "select": pairs,
            "statistical_checks": split or None}), *first.shared)

    @property
    def directory(self) -> str:
        first = self.cases[0]
        return first.directory if len(self.cases) == 1 else "-".join(
            (first.family, "mutants", *(word.lstrip("-") for word in first.shared)))


def batches(cases: list[Case]) -> list[Batch]:
    """The mutant cases that run (not skipped), grouped into ``Batch``es in plan order."""
    groups: dict[tuple, list[Case]] = {}
    for case in cases:
        if case.role == "mutant" and not case.skip:
            alone = "--sanitize" in case.shared
            key = (case.family, case.budget, case.shared, case.kernel if alone else "")
            groups.setdefault(key, []).append(case)
    return [Batch(tuple(group)) for group in groups.values()]


def plan(target: str, device: str, budget: str | None = None,
         mutants: list[str] | tuple[str, ...] = ()) -> list[Case]:
    """The runs of ``selftest TARGET`` on ``device``: the clean run, then every mutant of
    the families (only those named in ``mutants``, and no clean run, if any are named)."""
    families = _families(target)
    found = {(family, name): entry for family in families
             for name, entry in by_role(family, "mutant").items()}
    unknown = sorted(set(mutants) - {name for _, name in found})
    if unknown:
        raise HarnessError(f"no mutant named {', '.join(unknown)} in {target}; known: "
                           f"{', '.join(sorted({name for _, name in found}))}")
    cases = [] if mutants else [clean_case(target, device, budget)]
    return cases + [mutant_case(family, name, entry.meta, device, budget)
                    for (family, name), entry in found.items()
                    if not mutants or name in mutants]


@dataclass
class Result:
    """What one run concluded: pass / FAIL (clean), caught / ESCAPED (mutant), ERROR, or
    skipped."""

    case: Case
    status: str
    detail: str
    seconds: float = 0.0
    report: dict | None = None
    output: str = ""

    @property
    def ok(self) -> bool:
        return self.status in GOOD


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def judge(case: Case, code: int | None, report: dict | None, output: str) -> tuple[str, str]:
    """(status, detail) of a finished run from its exit code (None: timed out), its report
    (None: none readable) and its output."""
    if code not in (0, 1) or report is None or report.get("complete") is False:
        how = "timed out" if code is None else f"exit {code}"
        return "ERROR", f"{how}: {_last_line(output)}"
    checks = report["checks"]
    if case.role == "clean":
        wrong = [f"{c['family']} / {c['kernel']} / {c['name']}: {c['verdict']} (expected "
                 f"{c.get('expected', 'pass')})" for c in checks
                 if c.get("expected", "pass") not in (c["verdict"], "either")]
        kernels = {(c["family"], c["kernel"]) for c in checks}
        device = case.args[case.args.index("--device") + 1] \
            if "--device" in case.args else None
        missing = [f"{f} / {k}: no verdict" for f in _families(case.family)
                   for k in default_kernels(f, device) if (f, k) not in kernels]
        if wrong or missing or code != 0:
            return "FAIL", "; ".join((wrong + missing)[:4]) or f"exit {code}"
        return "pass", (f"{counted(len(checks), 'check')} of "
                        f"{counted(len(kernels), 'kernel')} as expected")
    verdicts = {c["name"]: c["verdict"] for c in checks}
    escaped = [name for name in case.expected if verdicts.get(name) == "pass"]
    if escaped:
        return "ESCAPED", f"{', '.join(escaped)} passed"
    if code == 1 and verdicts == case.expected:
        return "caught", f"{', '.join(case.expected)} failed"
    return "ERROR", f"verdicts {verdicts}, expected {', '.join(case.expected)} to fail"


def run_case(case: Case, directory: Path, timeout: float = RUN_TIMEOUT) -> Result:
    """Run one case as a ``sampling-harness check`` child writing its reports to
    ``directory``, and judge it."""
    if case.skip:
        return Result(case, "skipped", case.skip)
    started = time.perf_counter()
    # a mutant runs in its own child already: in-process checks spare a worker's start
    # (torch imported twice)
    code, output, report = _run_and_read(case.args, case.role == "mutant", directory, timeout)
    seconds = time.perf_counter() - started
    status, detail = judge(case, code, report, output)
    return Result(case, status, detail, seconds, report, output)


def run_batch(batch: Batch, directory: Path, timeout: float = RUN_TIMEOUT) -> list[Result]:
    """Run a batch of mutants as one ``sampling-harness check`` child writing its reports to
    ``directory``, and judge each mutant on its own checks (its seconds: theirs)."""
    if len(batch.cases) == 1:
        return [run_case(batch.cases[0], directory, timeout)]
    code, output, report = _run_and_read(batch.args, True, directory, timeout)
    results = []
    for case in batch.cases:
        own = None if report is None else {
            **report, "checks": [c for c in report["checks"] if c["kernel"] == case.kernel]}
        status, detail = judge(case, code, own, output)
        seconds = sum(c.get("duration") or 0 for c in own["checks"]) if own else 0.0
        results.append(Result(case, status, detail, seconds, own, output))
    return results


def _run_and_read(args, in_process: bool, directory: Path,
                  timeout: float) -> tuple[int | None, str, dict | None]:
    """(exit code, output, report or None) of a ``sampling-harness check`` child. One run
    ``in_process`` (``--isolation none``) that a fault takes down runs again with its checks
    in workers, where the fault is the verdict of the check it happened in."""
    isolation = ["--isolation", "none"] if in_process else []
    code, output = _run(list(args), isolation, directory, timeout)
    if isolation and code not in (0, 1, None):
        code, output = _run(list(args), [], directory, timeout)
    try:
        return code, output, read_report(directory / "report.json")
    except HarnessError as exc:
        return code, f"{output}\n{exc}", None


def _run(args: list[str], isolation: list[str], directory: Path,
         timeout: float) -> tuple[int | None, str]:
    """One ``sampling-harness check`` child: (exit code or None when timed out, output)."""
    command = [sys.executable, "-m", "sampling_harness", *args, *isolation,
               "--report-dir", str(directory)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        return done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        return None, f"the run did not finish within {timeout:g} s"


def _rows(result: Result) -> list[tuple]:
    """Table rows: one per mutant; one per kernel of the clean run."""
    case = result.case
    if case.role == "mutant" or result.report is None:
        return [(case.family, case.kernel or "clean kernels", case.role, case.budget,
                 result.status, result.seconds, result.detail)]
    rows = []
    for family, kernel in dict.fromkeys((c["family"], c["kernel"])
                                        for c in result.report["checks"]):
        own = [c for c in result.report["checks"] if (c["family"], c["kernel"]) == (family,
                                                                                   kernel)]
        wrong = [f"{c['name']} {c['verdict']}" for c in own
                 if c.get("expected", "pass") not in (c["verdict"], "either")]
        rows.append((family, kernel, own[0].get("role", "kernel"), case.budget,
                     "FAIL" if wrong else "pass", sum(c.get("duration") or 0 for c in own),
                     ", ".join(wrong) or f"{counted(len(own), 'check')} as expected"))
    return rows + ([] if result.ok else [(case.family, "clean run", "clean", case.budget,
                                          result.status, result.seconds, result.detail)])


def to_markdown(results: list[Result]) -> str:
    lines = ["| family | kernel | role | budget | result | seconds | detail |",
             "|---|---|---|---|---|---:|---|"]
    for result in results:
        for family, kernel, role, budget, status, seconds, detail in _rows(result):
            lines.append(f"| {family} | {kernel} | {role} | {budget} | {status} | "
                         f"{seconds:.1f} | {detail.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def conclude(results: list[Result]) -> int:
    """0 when every run went as it must, else 1."""
    return 0 if all(result.ok for result in results) else 1


def run_selftest(args, out: Path) -> int:
    from sampling_harness.device import resolve_device
    from sampling_harness.report.writers import atomic_write, writable

    run = RunOptions.from_namespace(args)      # --device, --budget, --kernel (mutants)
    device = resolve_device(run.device).type
    cases = plan(args.family, device, run.budget, run.kernel)
    writable(out)
    runs = [Batch((case,)) for case in cases if case.role == "clean" or case.skip] + \
        batches(cases)
    skipped = sum(bool(case.skip) for case in cases)
    print(f"selftest {args.family} on {device}: {len(cases) - skipped} cases in "
          f"{len(runs) - skipped} runs ({skipped} skipped here), reports under {out}/",
          flush=True)
    results = []
    for batch in runs:
        for result in run_batch(batch, out / batch.directory, args.run_timeout):
            results.append(result)
            print(f"[{len(results)}/{len(cases)}] {result.case.label}: {result.status} in "
                  f"{result.seconds:.0f} s: {result.detail}", flush=True)
    text = to_markdown(results)
    atomic_write(out / "selftest.md", f"# sampling-harness selftest {args.family} on "
                                      f"{device}\n\n{text}")
    bad = [r for r in results if not r.ok]
    print(text + f"\n{len(results) - len(bad)} of {len(results)} cases as they must be; "
                 f"table: {out}/selftest.md")
    return conclude(results)
