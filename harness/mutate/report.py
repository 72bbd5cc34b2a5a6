"""The reports of ``mutate``: report.json, summary.md, junit.xml (report.html: harness/mutate/
html.py) and the terminal's summary, rewritten after every mutant like a check run's
(``session.write_all``: a run that is stopped keeps the mutants that finished).

summary.md holds the per-kernel score table that docs/measurements/ takes: one row with the
counts of each outcome and the score with its interval; then the score per operator and per
source line, every mutant, each gap with its inputs and both outputs (and its law test),
each undecided mutant (its law test could not decide: "undecided (power N)", outside the
score) and each same-law mutant with its law test.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from sampling_harness.mutate.classify import (
    OUTCOMES,
    OUTSIDE,
    Result,
    by_line,
    by_operator,
    score,
    table,
)
from sampling_harness.mutate.law import describe, power_label

SCORE_HEADER = ["kernel", "budget", "device", "mutants", *OUTCOMES, "score (killed / "
                "killed + gap)", "seconds"]


# the survivors whose differing calls summary.md details, in order, with their section titles
SURVIVOR_SECTIONS = (
    ("gap", "Gaps (every check passed; an output differs from the original's)"),
    ("undecided", "Undecided (outputs differ on the same seed; the law test could not "
                  "decide: outside the score)"),
    ("same-law", "Same law (outputs differ on the same seed; a two-sample test cannot tell "
                 "the laws apart)"),
)

def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def where(result: Result) -> str:
    """'triton_race.py:97'"""
    return f"{Path(result.site.path).name}:{result.site.line}"


def change(result: Result) -> str:
    """'`>` -> `>=`' (a code span: backticks inside get a longer fence)."""
    fence = "``" if "`" in result.site.original + result.site.replacement else "`"
    return f"{fence}{result.site.original}{fence} -> {fence}{result.site.replacement}{fence}"


def _row(cells) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def score_row(results: list[Result], meta: dict) -> list:
    counts = [sum(r.outcome == o for r in results) for o in OUTCOMES]
    return [meta.get("kernel"), meta.get("budget"), meta.get("device"), len(results), *counts,
            score(results).text, f"{meta.get('seconds', 0):.0f}"]


def _grouped(results: list[Result], key, title: str) -> list[str]:
    lines = [_row([title, *OUTCOMES, "score"]), "|" + "---|" * (len(OUTCOMES) + 2)]
    for name, counts, group in table(results, key):
        lines.append(_row([f"`{name}`" if title == "line" else name,
                           *(counts[o] for o in OUTCOMES), group.text]))
    return lines


def gap_details(result: Result) -> list[str]:
    """A gap in Markdown: the call, the check that would have to see it, the inputs, both
    outputs where they differ."""
    gap = result.gap or {}
    lines = [f"### {result.id}: {where(result)} {change(result)} ({result.site.operator})",
             "", f"- the first call that differs: call {gap.get('call', '?')} of check "
                 f"`{gap.get('check', '?')}`, the check that would have to see it",
             f"- {result.detail}"]
    for name, text in (gap.get("inputs") or {}).items():
        lines.append(f"- input `{name}`: {text}")
    for part in gap.get("differences") or []:
        for at in part.get("at", []):
            lines.append(f"- output part {part['part']} at {at['index']}: original "
                         f"`{at['original']}`, mutant `{at['mutant']}`")
    law = gap.get("law")
    if law:
        lines.append(f"- law: {law_verdict(law)}: {describe(law)}")
    if gap.get("original_repeats") is False:
        lines.append("- note: the original, called again on these inputs, did not repeat its "
                     "recorded output (a nondeterministic kernel?)")
    if gap.get("saved"):
        lines.append(f"- inputs saved: `{gap['saved']}`")
    if gap.get("error"):
        lines.append(f"- the original could not be called again: {gap['error']}")
    return lines + [""]


def law_verdict(law: dict) -> str:
    """The law test's verdict in words (harness/mutate/law.py)."""
    if law.get("verdict") == "undecided":
        return f"undecided ({power_label(law)}): {law.get('reason', '?')}" \
            if law.get("p_value") is not None else "undecided (no test)"
    return {"same-law": "same law (not rejected)", "differs": "the law differs (rejected)",
            "values": "no law to test"}.get(law.get("verdict"), "not tested")


def to_markdown(results: list[Result], meta: dict) -> str:
    done = "" if meta.get("complete", True) else " (INCOMPLETE: stopped before every " \
                                                 "mutant ran)"
    lines = [f"# sampling-harness mutate: {meta.get('family')} / {meta.get('kernel')}{done}",
             "", f"`{meta.get('command', '')}`", "",
             f"{meta.get('chosen')} of {meta.get('sites')} mutants (mutant seed "
             f"{meta.get('mutant_seed')}) of the source reachable from `{meta.get('target')}`; "
             f"the family's checks at budget `{meta.get('budget')}` on `{meta.get('device')}`, "
             f"harness seed `{meta.get('harness_seed')}`. The original: "
             f"{meta.get('original', {}).get('calls', '?')} kernel calls in "
             f"{meta.get('original', {}).get('seconds', 0):.0f} s.", "",
             _row(SCORE_HEADER), "|" + "---|" * len(SCORE_HEADER), _row(score_row(results, meta)),
             "", "## Per operator", "", *_grouped(results, by_operator, "operator"), "",
             "## Per source line", "", *_grouped(results, by_line, "line"), "",
             "## Mutants", "", _row(["mutant", "line", "change", "operator", "outcome",
                                     "check", "seconds", "detail"]), "|" + "---|" * 8]
    for r in sorted(results, key=lambda r: r.id):
        lines.append(_row([r.id, where(r), change(r), r.site.operator, f"**{r.outcome_text}**",
                           r.check or "-", f"{r.seconds:.1f}", r.detail]))
    for outcome, title in SURVIVOR_SECTIONS:
        survivors = [r for r in results if r.outcome == outcome]
        if survivors:
            lines += ["", f"## {title}", ""]
            for r in survivors:
                lines += gap_details(r)
    modules = meta.get("modules") or {}
    if modules:
        lines += ["", "## Reachable source", ""] + [f"- `{m}`: {path}"
                                                    for m, path in modules.items()]
    return "\n".join(lines) + "\n"


def to_json(results: list[Result], meta: dict) -> str:
    s = score(results)
    body = {**meta, "score": {"killed": s.killed, "gaps": s.gaps, "rate": s.rate,
                              "interval": [s.low, s.high], "level": 0.95},
            "counts": {o: sum(r.outcome == o for r in results) for o in OUTCOMES},
            "mutants": [r.to_dict() for r in sorted(results, key=lambda r: r.id)]}
    return json.dumps(body, indent=1, default=str) + "\n"


def to_junit(results: list[Result], meta: dict) -> str:
    """One test case per mutant: killed passes, a gap or an error fails, undecided,
    same-law, equivalent, dead and stillborn mutants are skipped with their reason."""
    suite = ET.Element("testsuite", name=f"sampling-harness mutate {meta.get('family')} "
                       f"{meta.get('kernel')}", tests=str(len(results)),
                       failures=str(sum(r.outcome == "gap" for r in results)),
                       errors=str(sum(r.outcome == "error" for r in results)),
                       skipped=str(sum(r.outcome in OUTSIDE
                                       for r in results)),
                       time=f"{sum(r.seconds for r in results):.3f}")
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="score", value=score(results).text)
    for r in sorted(results, key=lambda r: r.id):
        case = ET.SubElement(suite, "testcase", classname=f"mutate.{meta.get('kernel')}",
                             name=f"{r.id} {r.site.label}", time=f"{r.seconds:.3f}")
        if r.outcome in ("gap", "error"):
            ET.SubElement(case, "failure" if r.outcome == "gap" else "error",
                          message=f"{r.outcome}: {r.detail}").text = \
                "\n".join(gap_details(r)) if r.outcome == "gap" else r.detail
        elif r.outcome != "killed":
            ET.SubElement(case, "skipped", message=f"{r.outcome_text}: {r.detail}")
    return ET.tostring(suite, encoding="unicode") + "\n"


def terminal_lines(results: list[Result], meta: dict, directory: Path) -> list[str]:
    """The end of a run on the terminal: the score table, per operator, each gap."""
    lines = ["", _row(SCORE_HEADER), _row(score_row(results, meta)), "",
             *_grouped(results, by_operator, "operator")]
    gaps = [r for r in results if r.outcome == "gap"]
    if gaps:
        lines += ["", "gaps (every check passed; an output differs):"]
        lines += [f"  {r.id} {r.site.label}: {r.detail}" for r in gaps]
    undecided = [r for r in results if r.outcome == "undecided"]
    if undecided:
        lines += ["", "undecided (outputs differ on the same seed; the law test could not "
                      "decide; outside the score):"]
        lines += [f"  {r.id} {r.site.label}: {r.outcome_text}: {r.detail}" for r in undecided]
    same = [r for r in results if r.outcome == "same-law"]
    if same:
        lines += ["", "same law (outputs differ on the same seed; the laws cannot be told "
                      "apart):"]
        lines += [f"  {r.id} {r.site.label}: {r.detail}" for r in same]
    return lines + ["", f"report: {directory}/ (summary.md, report.json, junit.xml, "
                        f"report.html; each mutant's source and run under mutants/)"]
