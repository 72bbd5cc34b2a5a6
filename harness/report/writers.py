"""Report writers: report.json, junit.xml, summary.md and report.html, each written atomically.

They are rewritten after every check, so a run that is interrupted leaves a complete report
of the checks that finished.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

from sampling_harness.errors import HarnessError
from sampling_harness.report.html import skipped_checks, to_html
from sampling_harness.verdict import Verdict, finished_of_selected, overall, run_verdict

_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)   # mkstemp makes 0600: reports are for others too
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _finite(value):
    """JSON has no NaN or infinity: keep them readable as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def made_once(v: Verdict, kind: str, make) -> str:
    """``make(v)``, made once per verdict and ``kind``, kept on the verdict: a recorded
    verdict never changes, and the reports are rewritten after every check (each rewrite
    making every check's text again costs the run time quadratic in its checks)."""
    made = v.__dict__.setdefault("_made", {})
    if kind not in made:
        made[kind] = make(v)
    return made[kind]


def _json_record(v: Verdict) -> str:
    """The check's object as report.json holds it: in ``checks``, indented 2 a level."""
    return textwrap.indent(json.dumps(_finite(v.to_dict()), indent=2), "    ")


def to_json(verdicts: list[Verdict], meta: dict) -> str:
    """``verdict``: the run's ("incomplete" when it did not finish, ``run_verdict``);
    ``verdict_of_finished``: what the finished checks say; ``finished`` (with a verdict or
    skipped) of ``selected`` checks; each check's ``duration`` in seconds; ``skipped``: the
    records of the skipped checks (never in ``checks``, whose readers expect a verdict).
    Every field: docs/reference/report-json.md. The text is ``json.dumps(body, indent=2)``'s,
    each check's record made once (``made_once``)."""
    body = {"verdict": run_verdict(verdicts, meta), "verdict_of_finished": overall(verdicts),
            "finished": len(verdicts), **meta, "skipped": skipped_checks(meta)}
    records = ",\n".join(made_once(v, "json", _json_record) for v in verdicts)
    checks = f"[\n{records}\n  ]" if verdicts else "[]"
    return json.dumps(_finite(body), indent=2)[:-2] + f',\n  "checks": {checks}\n}}\n'


def incomplete_line(verdicts: list[Verdict], meta: dict) -> str:
    """'INCOMPLETE: 3 of 77 checks finished (the finished checks: pass); did not finish: ...'"""
    unfinished = meta.get("not_finished") or []
    listed = f"; did not finish: {', '.join(unfinished[:5])}" + (
        f" and {len(unfinished) - 5} more" if len(unfinished) > 5 else "") if unfinished else ""
    return (f"INCOMPLETE: {finished_of_selected(verdicts, meta)} (stopped, timed out, or a "
            f"worker died); the finished checks: {overall(verdicts)}{listed}")


def to_junit(verdicts: list[Verdict], meta: dict | None = None) -> str:
    """One testcase per check (a skipped check: ``skipped`` with its reason, after the
    others); the run's verdict and count as testsuite properties, and an incomplete run as
    one more testcase in error, so CI never reads it as green."""
    meta = meta or {}
    incomplete = run_verdict(verdicts, meta) == "incomplete"
    not_run = skipped_checks(meta)
    failures = sum(v.verdict != "error" and not v.as_expected for v in verdicts)
    errors = sum(v.verdict == "error" for v in verdicts) + incomplete
    skipped = sum(v.verdict == "fail" and v.as_expected for v in verdicts) + len(not_run)
    suite = ET.Element("testsuite", name="sampling-harness",
                       tests=str(len(verdicts) + incomplete + len(not_run)),
                       failures=str(failures), errors=str(errors), skipped=str(skipped),
                       time=f"{sum(v.duration for v in verdicts):.3f}")
    properties = ET.SubElement(suite, "properties")
    for name, value in (("verdict", run_verdict(verdicts, meta)),
                        ("finished", meta.get("finished", len(verdicts))),
                        ("selected", meta.get("selected", "")),
                        ("complete", str(bool(meta.get("complete", True))).lower())):
        ET.SubElement(properties, "property", name=name, value=str(value))
    if incomplete:
        case = ET.SubElement(suite, "testcase", classname="sampling-harness", name="run",
                             time="0")
        line = incomplete_line(verdicts, meta)
        ET.SubElement(case, "error", message=line, type="incomplete").text = line
    for v in verdicts:
        case = ET.SubElement(suite, "testcase", classname=f"{v.family}.{v.kernel}",
                             name=v.name, time=f"{v.duration:.3f}")
        if v.verdict == "error" or not v.as_expected:
            message = v.message if v.expected == "pass" else \
                f"{v.verdict}, stated {v.expected} ({v.why}): {v.message}"
            node = ET.SubElement(case, "error" if v.verdict == "error" else "failure",
                                 message=message)
            node.text = f"{message}\nreproduce: {v.reproduce}"
        elif v.verdict == "fail":     # a baseline failing as its expectation states
            ET.SubElement(case, "skipped", message=f"failed as stated: {v.why}")
        ET.SubElement(case, "system-out").text = made_once(
            v, "junit", lambda v: json.dumps(_finite(v.to_dict()), indent=1))
    for record in not_run:
        case = ET.SubElement(suite, "testcase", classname=f"{record.get('family')}."
                             f"{record.get('kernel')}", name=str(record.get("name")), time="0")
        ET.SubElement(case, "skipped", message=str(record.get("reason", "")))
    return ET.tostring(ET.ElementTree(suite).getroot(), encoding="unicode") + "\n"


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _row(v: Verdict, stated: bool) -> str:
    effect = f"{_fmt(v.min_detectable_effect, '.3g')} {v.effect}".strip()
    verdict = f"**{v.verdict}**" + (
        "" if not stated else " (as stated)" if v.as_expected else " (**not as stated**)")
    cells = [v.kernel, v.name, verdict, _fmt(v.p_value, ".3g"), _fmt(v.alpha, ".2g"),
             _fmt(v.samples, ","), effect, f"{v.duration:.1f}", v.message]
    if stated:
        cells.insert(3, v.expected)
    return "| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cells) + " |"


HEADER = ["kernel", "check", "verdict", "p-value", "alpha", "samples",
          "min. detectable effect", "seconds", "message"]


def _skipped_row(record: dict, stated: bool) -> str:
    """A skipped check: no number, its reason as the message."""
    cells = [record.get("kernel"), record.get("name"), "skipped", *["-"] * (5 + stated),
             record.get("reason", "")]
    return "| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cells) + " |"


def _table(verdicts: list[Verdict], stated: bool, skipped: list[dict] = ()) -> list[str]:
    header = HEADER[:3] + ["stated"] + HEADER[3:] if stated else HEADER
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *(_row(v, stated) for v in verdicts), *(_skipped_row(r, stated) for r in skipped)]


def to_markdown(verdicts: list[Verdict], meta: dict) -> str:
    """The run's summary: kernels (and mutants) must pass; baselines, an engine's shipped
    behaviour, are listed apart with their stated expectation, which the run gates on."""
    kernels = [v for v in verdicts if v.role != "baseline"]
    baselines = [v for v in verdicts if v.role == "baseline"]
    skipped = skipped_checks(meta)
    kernels_skipped = [r for r in skipped if r.get("role") != "baseline"]
    baselines_skipped = [r for r in skipped if r.get("role") == "baseline"]
    unfinished = meta.get("not_finished") or []
    state = run_verdict(verdicts, meta)
    title = f"INCOMPLETE ({finished_of_selected(verdicts, meta)})" if state == "incomplete" \
        else state.upper()
    lines = [f"# sampling-harness: {title}", ""]
    if state == "incomplete":
        lines += ["The run did not finish: " + incomplete_line(verdicts, meta).removeprefix(
            "INCOMPLETE: ") + ".", ""]
    lines += [
             f"budget `{meta.get('budget')}`, device `{meta.get('device')}`, harness seed "
             f"`{meta.get('harness_seed')}`, family-wise false-fail budget "
             f"`{meta.get('family_alpha')}`{_spread(meta)}", ""]
    if kernels or kernels_skipped:
        lines += _table(kernels, stated=False, skipped=kernels_skipped)
    if baselines or baselines_skipped:
        lines += ["", "## Baselines (engines' shipped behaviour, gated on their stated "
                      "expectation)", "", *_table(baselines, stated=True,
                                                  skipped=baselines_skipped)]
        lines += ["", *sorted({f"- {v.kernel}: {v.why}" for v in baselines if v.why})]
    failed = [v for v in verdicts if not v.as_expected]
    if failed:
        lines += ["", "## Reproduce", ""]
        lines += [f"- `{v.reproduce}`" for v in failed]
    if unfinished:
        lines += ["", "## Did not finish (yet)", ""] + [f"- `{n}`" for n in unfinished]
    return "\n".join(lines) + "\n"


def _spread(meta: dict) -> str:
    """', over 2 pytest-xdist workers' / ', sharded over 4 ranks': how the run was spread."""
    if meta.get("workers"):
        return f", over {meta['workers']} pytest-xdist workers"
    if meta.get("world_size"):
        return f", sharded over {meta['world_size']} torchrun ranks"
    return ""


def write_all(directory: Path, verdicts: list[Verdict], meta: dict) -> None:
    atomic_write(directory / "report.json", to_json(verdicts, meta))
    atomic_write(directory / "junit.xml", to_junit(verdicts, meta))
    atomic_write(directory / "summary.md", to_markdown(verdicts, meta))
    atomic_write(directory / "report.html", to_html(verdicts, meta))


def writable(directory: Path) -> None:
    """Make ``directory`` and prove a report can be written there, else ``HarnessError``
    (one line): a run must not spend an hour to lose its report at the end."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=directory, prefix=".probe.", delete=True)
        probe.close()
    except OSError as exc:
        raise HarnessError(f"report directory {str(directory)!r} is not writable: "
                           f"{exc.strerror or type(exc).__name__}") from None


def append_step_summary(summary: Path) -> None:
    """Append the run's summary.md to $GITHUB_STEP_SUMMARY when the variable is set (the job
    summary of a GitHub Actions step); a summary file that cannot be written is said on
    stderr, never raised: the run's own reports are already written."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target or not summary.exists():
        return
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(summary.read_text(encoding="utf-8") + "\n")
    except OSError as exc:
        print(f"sampling-harness: warning: cannot append to GITHUB_STEP_SUMMARY {target!r}: "
              f"{exc.strerror or exc}", file=sys.stderr)

