"""What became of each mutant, and the mutation score.

Outcomes (docs/how-to/mutate.md):

* ``killed``: a check of the family failed (or erred) on it, or its run crashed (a signal:
  a stray store of the Triton interpreter corrupts the process) or ran past its time;
* ``gap``: every check passed, yet some call's output differs from the original's on the
  same inputs and seed: the checks saw the difference and let it through. The first such
  call is reported: its check (the one that would have to see it), its inputs, both
  outputs where they differ; for a family that draws, the two-sample test of the law that
  rejected (its p-value), or why the law was not tested;
* ``same-law`` (likely equivalent in law): every check passed, the outputs differ on the
  same seed, the family draws ids, and a two-sample chi-square test over fresh seeds at the
  first differing call cannot tell the original's law from the mutant's at alpha 1e-3 with
  draws enough to detect, with power 0.99, the total variation the family's checks resolve
  at the run's budget (harness/mutate/law.py: its draws follow the budget): a mutant that
  re-keys the random stream, which no statistical check can or should kill. Evidence, not
  proof: a change of law below the detectable deviation is filed here;
* ``undecided`` ("undecided (power N)"): as same-law, but the law test could not decide:
  not rejected, yet it detects only a total variation N above the budget's target (its
  draws cut short by the time or the memory a test may take), or it could not run at all
  (no degrees of freedom, outputs too large, a kernel too slow): outside the score, never
  a gap, so that a test too weak to clear a re-keying mutant does not count it as missed;
* ``equivalent`` (likely): every check passed and every call's output is identical to the
  original's, bit for bit, over all the calls compared; no check that judges outputs can
  kill it on these inputs;
* ``dead``: its line never ran in the original's run (harness/mutate/coverage.py), so it
  was not run: it cannot differ from the original there;
* ``stillborn``: the mutated module cannot be imported, or the mutant could not be
  written; ``error``: its run ended otherwise (no report, calls that cannot be compared).

Score: killed / (killed + gap), the share of the mutants the checks could tell apart that
they did tell apart, with its exact (Clopper-Pearson) 95 % interval. Undecided, same-law,
equivalent, dead and stillborn mutants are outside it (neither killed nor gap) and reported
on their own.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sampling_harness.mutate.law import describe, power_label
from sampling_harness.mutate.operators import OPERATORS, Site
from sampling_harness.mutate.runs import ChildRun
from sampling_harness.stats.binomial import clopper_pearson

OUTCOMES = ("killed", "gap", "undecided", "same-law", "equivalent", "dead", "stillborn",
            "error")
OUTSIDE = ("undecided", "same-law", "equivalent", "dead", "stillborn")   # not in the score
LEVEL = 0.95


@dataclass
class Result:
    """One mutant's outcome, with the check it concerns (the one that killed it, or the one
    whose call shows the gap), a one-line detail, and for a survivor the differential."""

    id: str
    site: Site
    outcome: str
    detail: str
    check: str | None = None
    seconds: float = 0.0
    compared: int | None = None
    gap: dict | None = None
    directory: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def outcome_text(self) -> str:
        """Its outcome as reports show it (``outcome_label``): 'undecided (power 0.21)'."""
        return outcome_label(self.outcome, (self.gap or {}).get("law"))

    def to_dict(self) -> dict:
        body = asdict(self)
        body["site"] = {k: v for k, v in asdict(self.site).items() if k not in ("key",)}
        body["label"] = self.site.label
        body["outcome_label"] = self.outcome_text
        return body


def first_line(text: str, limit: int = 240) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def dead(mutant_id: str, site: Site, original_calls: int) -> Result:
    return Result(mutant_id, site, "dead", f"its line never ran in the original's "
                                           f"{original_calls} calls: not run")


def classify(mutant_id: str, site: Site, run: ChildRun, diff_path: Path) -> Result:
    """The outcome of a mutant's finished run (its report, its differential record)."""
    common = {"seconds": round(run.seconds, 1), "directory": str(run.directory)}
    checks = (run.report or {}).get("checks", [])
    failed = [c for c in checks if c.get("verdict") in ("fail", "error")]
    if failed:
        first = failed[0]
        return Result(mutant_id, site, "killed", first_line(first.get("message", "")),
                      check=first.get("name"), **common)
    if run.timed_out:
        return Result(mutant_id, site, "killed", "fault: its run did not finish in time "
                      "(a hang or a slowdown)", **common)
    if run.code is not None and run.code < 0:
        return Result(mutant_id, site, "killed", f"fault: its run crashed (signal "
                      f"{-run.code}: {_signal_name(-run.code)})", **common)
    if run.code not in (None, 0, 1, 2):     # exit(3) in native code, under the interpreter
        return Result(mutant_id, site, "killed", f"fault: its run exited with status "
                      f"{run.code}", **common)
    if run.report is None:
        why = next((line for line in run.output.splitlines()[::-1]
                    if "error" in line.lower()), f"exit {run.code}")
        outcome = "stillborn" if "cannot import" in run.output or \
            "cannot be loaded" in run.output else "error"
        return Result(mutant_id, site, outcome, first_line(why), **common)
    if run.code != 0:
        return Result(mutant_id, site, "error", f"exit {run.code}: "
                      f"{first_line(run.output.splitlines()[-1] if run.output else '')}",
                      **common)
    try:
        diff = json.loads(diff_path.read_text())
    except (OSError, ValueError):
        return Result(mutant_id, site, "error", "its calls were not recorded", **common)
    return survivor(mutant_id, site, diff, common)


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"


def survivor(mutant_id: str, site: Site, diff: dict, common: dict) -> Result:
    """Every check passed: a gap (an output differs, and for a family that draws, the law
    test at the first differing call rejected, or could not be run: a kernel that failed on
    a fresh seed, outputs that are values), same-law (it differs, but the law test cannot
    tell the laws apart, with the power the budget asks), undecided (the law test could not
    decide: too weak for the budget's target, or no test), likely equivalent (no output
    differs, over every call of the original), or an error (the calls could not be
    matched)."""
    compared, differing = diff.get("compared", 0), diff.get("differing", 0)
    if differing:
        gap = diff.get("first") or {}
        law = gap.get("law") or {}
        line = gap_line(gap, differing, compared)
        fields = {"check": gap.get("check"), "compared": compared, "gap": gap, **common}
        if law.get("verdict") == "same-law":
            return Result(mutant_id, site, "same-law", f"likely equivalent in law: {line}; "
                          f"the laws cannot be told apart: {describe(law)}", **fields)
        if law.get("verdict") == "undecided":
            why = f"{law.get('reason', '?')}: {describe(law)}" if law.get("p_value") is not \
                None else law.get("reason", "?")
            return Result(mutant_id, site, "undecided", f"{line}; the law test cannot "
                          f"decide, {why}", **fields)
        if law.get("verdict") == "differs":
            line += f"; the law differs: {describe(law)}"
        elif law.get("verdict") == "untested":
            line += f"; law not tested: {describe(law)}"
        return Result(mutant_id, site, "gap", line, **fields)
    if diff.get("diverged") or diff.get("missing"):
        return Result(mutant_id, site, "error", f"calls not comparable with the original's "
                      f"({diff.get('diverged') or str(diff.get('missing')) + ' missing'}); "
                      f"{compared} compared, all identical", compared=compared, **common)
    return Result(mutant_id, site, "equivalent", f"identical outputs on all {compared} calls "
                  f"of the original", compared=compared, **common)


def outcome_label(outcome: str, law: dict | None) -> str:
    """The outcome as a report shows it: 'undecided (power 0.21)' (the total variation its
    law test detects on every row with power 0.99; 'undecided (no test)' where none ran),
    every other outcome its name."""
    return f"undecided ({power_label(law)})" if outcome == "undecided" else outcome


def gap_line(gap: dict, differing: int, compared: int) -> str:
    """'fit_curated call 0: 3 of 1024 ids differ (at [17]: 5 -> 9); 2 of 54 calls differ'"""
    where = f"{gap.get('check', '?')} call {gap.get('call', '?')}"
    parts = gap.get("differences") or []
    first = parts[0] if parts else {}
    what = (f"{first['differ']} of {first['of']} values differ" if isinstance(
        first.get("differ"), int) else "output kind differs") if first else "output differs"
    shown = first.get("at", [{}])[0] if first.get("at") else None
    at = f" (at {shown['index']}: {shown['original']} -> {shown['mutant']})" if shown else ""
    return f"{where}: {what}{at}; {differing} of {compared} calls differ"


@dataclass(frozen=True)
class Score:
    killed: int
    gaps: int
    rate: float | None
    low: float
    high: float

    @property
    def text(self) -> str:
        if self.rate is None:
            return "- (no mutant the checks could tell apart)"
        return (f"{100 * self.rate:.1f} % ({self.killed}/{self.killed + self.gaps}; "
                f"95 % CI {100 * self.low:.1f}-{100 * self.high:.1f} %)")


def score(results: list[Result]) -> Score:
    killed = sum(r.outcome == "killed" for r in results)
    gaps = sum(r.outcome == "gap" for r in results)
    low, high = clopper_pearson(killed, killed + gaps, LEVEL)
    return Score(killed, gaps, killed / (killed + gaps) if killed + gaps else None, low, high)


def table(results: list[Result], key) -> list[tuple[str, dict, Score]]:
    """Rows (name, counts by outcome, score) grouped by ``key(result)``, in key order."""
    groups: dict[str, list[Result]] = {}
    for result in results:
        groups.setdefault(key(result), []).append(result)
    order = sorted(groups, key=lambda k: (OPERATORS.index(k) if k in OPERATORS else 99,
                                          _natural(k)))
    return [(name, {o: sum(r.outcome == o for r in groups[name]) for o in OUTCOMES},
             score(groups[name])) for name in order]


def _natural(text: str):
    """'a.py:9' before 'a.py:10'."""
    head, _, tail = text.rpartition(":")
    return (head, int(tail)) if tail.isdigit() else (text, 0)


def by_operator(result: Result) -> str:
    return result.site.operator


def by_line(result: Result) -> str:
    return f"{Path(result.site.path).name}:{result.site.line}"
