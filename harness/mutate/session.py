"""One ``mutate`` run: the original's recorded run, then the mutants, their outcomes, the
reports after each (``sampling_harness.commands.mutate`` describes the steps)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from sampling_harness.errors import HarnessError
from sampling_harness.mutate import coverage, law
from sampling_harness.mutate.classify import Result, classify, dead, first_line, score
from sampling_harness.mutate.edit import apply
from sampling_harness.mutate.html import to_html
from sampling_harness.mutate.operators import Site
from sampling_harness.mutate.reach import Reach
from sampling_harness.mutate.report import terminal_lines, to_json, to_junit, to_markdown
from sampling_harness.mutate.runs import (
    ChildRun,
    Settings,
    command,
    environment,
    in_parallel,
    run_child,
)
from sampling_harness.mutate.workspace import PREFIX, Mutant, copy_name, write, write_copy
from sampling_harness.report.writers import atomic_write
from sampling_harness.words import counted

MIN_CALL_TIMEOUT = 10.0        # seconds: a mutant's call may take 10x the original's slowest
SLOWDOWN = 3.0                 # a mutant's run may take 3x the original's, plus EXTRA seconds
EXTRA = 120.0


def write_all(directory: Path, results: list[Result], meta: dict) -> None:
    """The four report files, each written atomically."""
    atomic_write(directory / "report.json", to_json(results, meta))
    atomic_write(directory / "summary.md", to_markdown(results, meta))
    atomic_write(directory / "junit.xml", to_junit(results, meta))
    atomic_write(directory / "report.html", to_html(results, meta))


def mutant_id(index: int) -> str:
    return f"m{index:04d}"


def dry_run(found: Reach, sites: list[Site], chosen: list[int]) -> int:
    """List the chosen mutants with their one-line diffs; 0."""
    for index in chosen:
        site = sites[index]
        line = apply(found.modules[site.module].text, site).splitlines()[site.line - 1]
        print(f"{mutant_id(index)} {site.label} ({site.operator}): {line.strip()}")
    return 0


class MutateRun:
    """The original's run, then each mutant's, and the reports after each."""

    def __init__(self, found: Reach, sites: list[Site], settings: Settings, report_dir: Path,
                 meta: dict, started: float):
        self.found, self.sites, self.settings = found, sites, settings
        self.report_dir, self.meta, self.started = report_dir, meta, started
        self.work = report_dir / "mutants"
        self.results: list[Result] = []
        self.total = 0

    # -- the original ------------------------------------------------------------------
    def record_original(self) -> dict:
        """Run the checks on the original's instrumented copy: its calls' fingerprints and
        the lines it ran. ``HarnessError`` unless every check passes."""
        names = sorted(self.found.units)
        files = [self.found.modules[name].path for name in names]
        directory = self.work / "original"
        interpreted = self.settings.device != "cuda"
        copies = write_copy(self.found, PREFIX + "original", directory / "src",
                            lambda name, text: coverage.instrument(
                                text, names.index(name), jit_too=interpreted))
        spec = directory / "trace.json"
        spec.write_text(json.dumps({"files": files, "copies": [str(copies[n]) for n in names],
                                    "out": str(directory / "coverage.json")}))
        target = f"{copy_name(self.found.module, self.found.scope, PREFIX + 'original')}:" \
                 f"{self.found.function}"
        print(f"original: the checks on {target} (instrumented copy) ...", flush=True)
        run = run_child(command(self.settings, target, directory / "report"),
                        environment(self.settings, directory / "src", directory / "calls.json",
                                    slot=0, trace=spec), directory, None)
        self._demand_pass(run)
        calls = json.loads((directory / "calls.json").read_text())
        lines_run = json.loads((directory / "coverage.json").read_text())
        self.meta["original"] = {"seconds": round(run.seconds, 1), "calls": len(calls["calls"]),
                                 "slowest_call": round(calls["slowest_call"], 3),
                                 "checks": len(run.report["checks"]),
                                 "report": str(directory / "report")}
        checks = counted(len(run.report["checks"]), "check")
        print(f"original: {checks} pass in {run.seconds:.1f} s, {len(calls['calls'])} kernel "
              f"calls recorded", flush=True)
        return {"run": run, "calls": directory / "calls.json", "coverage": lines_run,
                "slowest": calls["slowest_call"], "count": len(calls["calls"])}

    def _demand_pass(self, run: ChildRun) -> None:
        failed = [c for c in (run.report or {}).get("checks", []) if c["verdict"] != "pass"]
        if run.report is None or (run.code != 0 and not failed):
            tail = "\n".join(run.output.strip().splitlines()[-8:])
            raise HarnessError(f"the original's check run did not finish (exit {run.code}); "
                               f"its log: {run.directory}/run.log\n{tail}")
        if failed:
            why = first_line(failed[0].get("message", ""))
            raise HarnessError(
                f"the original fails {', '.join(c['name'] for c in failed)} at budget "
                f"{self.settings.budget} on {self.settings.device} ({why}): mutants cannot "
                f"be judged against it; its report: {run.directory}/report")
        if not run.report["checks"]:
            raise HarnessError("no check of the family ran on the original")

    # -- the mutants -------------------------------------------------------------------
    def run(self, chosen: list[int], run_timeout: float | None,
            call_timeout: float | None) -> list[Result]:
        self.total = len(chosen)
        try:
            return self._run(chosen, run_timeout, call_timeout)
        except KeyboardInterrupt:       # Ctrl-C, SIGTERM: the report of what finished
            self.write(complete=False)
            raise HarnessError(f"stopped: {len(self.results)} of {self.total} mutants "
                               f"finished; the report of those is in {self.report_dir}/") \
                from None

    def _run(self, chosen: list[int], run_timeout: float | None,
             call_timeout: float | None) -> list[Result]:
        original = self.record_original()
        timeout = run_timeout or SLOWDOWN * original["run"].seconds + EXTRA
        per_call = call_timeout or max(MIN_CALL_TIMEOUT, 10 * original["slowest"])
        live = []
        for index in chosen:
            site = self.sites[index]
            if coverage.reached(site, original["coverage"]):
                live.append(index)
            else:
                self._done(dead(mutant_id(index), site, original["count"]))
        target_name = f"{self.meta['family']}={self.meta['target']}"

        def one(index: int, slot: int) -> Result:
            mid, site = mutant_id(index), self.sites[index]
            directory = self.work / mid
            try:
                mutant = write(self.found, Mutant(mid, site), directory)
            except (ValueError, SyntaxError, OSError) as exc:
                return Result(mid, site, "stillborn", f"cannot be written: {exc}")
            target = f"{copy_name(self.found.module, self.found.scope, mutant.package)}:" \
                     f"{self.found.function}"
            env = environment(self.settings, mutant.source_root, directory / "calls.json",
                              slot=slot, against=original["calls"], original=target_name,
                              stop_first=True)
            env[law.ENV_BUDGET] = self.settings.budget    # the law test's draws follow it
            run = run_child(command(self.settings, target, directory / "report", per_call),
                            env, directory, timeout)
            return classify(mid, site, run, directory / "calls.json")

        in_parallel(live, self.settings.workers, one, lambda index, r: self._done(r))
        self.write(complete=True)
        for line in terminal_lines(self.results, self.meta, self.report_dir):
            print(line)
        return self.results

    def _done(self, result: Result) -> None:
        self.results.append(result)
        width = len(str(self.total))
        by = f" by {result.check}" if result.outcome == "killed" and result.check else ""
        took = f" in {result.seconds:.1f} s" if result.seconds else ""
        print(f"[{len(self.results):{width}d}/{self.total}] {result.id} {result.site.label} "
              f"({result.site.operator}): {result.outcome_text}{by}{took}: {result.detail}",
              flush=True)
        self.write(complete=False)

    def write(self, complete: bool) -> None:
        self.meta["complete"] = complete and len(self.results) == self.total
        self.meta["seconds"] = round(time.perf_counter() - self.started, 1)
        write_all(self.report_dir, self.results, self.meta)

    def final_score(self):
        return score(self.results)
