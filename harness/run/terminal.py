"""The end of a run on the terminal: a compact summary (the full table is in summary.md).

What a CI log or a desk terminal needs, in this order: the run's verdict (INCOMPLETE, with
how many checks finished of how many selected, when the run did not finish); per family,
the checks passed / failed / skipped; each failure with the number of its line (where its
one-line reason is: ``HarnessSession.progress``) and the command that reproduces it; the ten
slowest checks with their seconds; where the reports are.

Each failure is said once: its reason on its numbered line, as it happens; its reproduce
command here. pytest's own FAILURES section, short test summary and count line of the
checks are left out (``HarnessSession.said``) unless asked for: ``-v``, or
``--pytest-output full`` (the plugin's ``--harness-pytest-output full``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sampling_harness.report.writers import incomplete_line
from sampling_harness.verdict import Verdict, run_verdict
from sampling_harness.words import counted

SLOWEST = 10
REASON = 300          # characters of a failure's reason on the terminal


def one_line(text: str, limit: int = REASON) -> str:
    """The first line of ``text`` in at most ``limit`` characters: a longer one loses its
    middle, not its end, where a reason's value and reference or its call's shapes and seed
    stand (two thirds of the room for the head, the rest for the tail)."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    if len(line) <= limit:
        return line
    head = (limit - 5) * 2 // 3
    return f"{line[:head]} ... {line[len(line) - (limit - 5 - head):]}"


def _tally(verdicts: list[Verdict], skipped: list[dict]) -> dict[str, Counter]:
    """family -> counts of passed, failed (not as the run expects), failed as stated
    (a mutant caught, a baseline's stated failure), error and skipped."""
    tally: dict[str, Counter] = {}
    for v in verdicts:
        kind = ("error" if v.verdict == "error" else
                "failed" if not v.as_expected else
                "passed" if v.verdict == "pass" else "failed as stated")
        tally.setdefault(v.family, Counter())[kind] += 1
    for record in skipped:
        tally.setdefault(record["family"], Counter())["skipped"] += 1
    return tally


def _counts(counts: Counter) -> str:
    shown = [f"{counts[k]} {k}" for k in ("passed", "failed", "skipped")]
    shown += [f"{counts[k]} {k}{'s' * (k == 'error' and counts[k] != 1)}"
              for k in ("failed as stated", "error") if counts[k]]
    return ", ".join(shown)


def summary_lines(verdicts: list[Verdict], meta: dict, skipped: list[dict],
                  report_dir: Path | None, numbers: dict | None = None,
                  tracebacks: bool = True) -> list[str]:
    """The compact summary; ``skipped``: the records of the skipped checks (report.json's);
    ``numbers``: (family, kernel, name) -> "[n/N]", the numbered line of a check, which
    holds its reason; ``tracebacks``: pytest shows those of the checks that erred."""
    state = run_verdict(verdicts, meta)
    took = f", in {meta['seconds']:.1f} s" if meta.get("seconds") is not None else ""
    skips = f", {len(skipped)} skipped" if skipped else ""
    head = incomplete_line(verdicts, meta) if state == "incomplete" else \
        f"{state.upper()} ({counted(len(verdicts), 'check')}{skips}{took})"
    lines = [f"sampling-harness: {head}"]
    for family, counts in sorted(_tally(verdicts, skipped).items()):
        lines.append(f"  {family}: {_counts(counts)}")
    failed = [v for v in verdicts if not v.as_expected]
    numbers = numbers or {}
    if failed:
        lines.append("failures (the reason: on the numbered line above):")
        for v in failed:
            stated = "" if v.expected == "pass" else f" (stated: {v.expected})"
            number = numbers.get((v.family, v.kernel, v.name))
            lines += [f"  {number + ' ' if number else ''}{v.family} / {v.kernel} / {v.name}: "
                      f"{v.verdict}{stated}", f"    reproduce: {v.reproduce}"]
        if not tracebacks and any(v.verdict == "error" for v in failed):
            lines.append("  (an error's traceback: run again with --pytest-output full)")
    slowest = sorted(verdicts, key=lambda v: -v.duration)[:SLOWEST]
    if slowest:
        lines.append(f"slowest {counted(len(slowest), 'check')} (seconds):")
        lines += [f"  {v.duration:8.1f}  {v.family} / {v.kernel} / {v.name}" for v in slowest]
    if report_dir is not None and verdicts:
        lines.append(f"report: {report_dir}/ (summary.md: the full table; report.json, "
                     f"junit.xml, report.html)")
    elif not verdicts:
        lines.append("report: none (no check finished)")
    return lines
