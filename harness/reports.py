"""Report writers: report.json, junit.xml and summary.md, each written atomically.

They are rewritten after every check, so a run that is interrupted leaves a complete report
of the checks that finished.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.verdict import Verdict, overall


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
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


def to_json(verdicts: list[Verdict], meta: dict) -> str:
    body = {"verdict": overall(verdicts), **meta, "checks": [v.to_dict() for v in verdicts]}
    return json.dumps(_finite(body), indent=2) + "\n"


def to_junit(verdicts: list[Verdict]) -> str:
    failures = sum(v.verdict == "fail" for v in verdicts)
    errors = sum(v.verdict == "error" for v in verdicts)
    suite = ET.Element("testsuite", name="sampling-harness", tests=str(len(verdicts)),
                       failures=str(failures), errors=str(errors),
                       time=f"{sum(v.duration for v in verdicts):.3f}")
    for v in verdicts:
        case = ET.SubElement(suite, "testcase", classname=f"{v.family}.{v.kernel}",
                             name=v.name, time=f"{v.duration:.3f}")
        if v.verdict in ("fail", "error"):
            node = ET.SubElement(case, "failure" if v.verdict == "fail" else "error",
                                 message=v.message)
            node.text = f"{v.message}\nreproduce: {v.reproduce}"
        ET.SubElement(case, "system-out").text = json.dumps(_finite(v.to_dict()), indent=1)
    return ET.tostring(ET.ElementTree(suite).getroot(), encoding="unicode") + "\n"


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def to_markdown(verdicts: list[Verdict], meta: dict) -> str:
    lines = [f"# sampling-harness: {overall(verdicts).upper()}", "",
             f"budget `{meta.get('budget')}`, device `{meta.get('device')}`, harness seed "
             f"`{meta.get('harness_seed')}`, family-wise false-fail budget "
             f"`{meta.get('family_alpha')}`", "",
             "| kernel | check | verdict | p-value | alpha | samples | min. detectable effect "
             "| seconds | message |",
             "|---|---|---|---|---|---|---|---|---|"]
    for v in verdicts:
        effect = f"{_fmt(v.min_detectable_effect, '.3g')} {v.effect}".strip()
        lines.append(f"| {v.kernel} | {v.name} | **{v.verdict}** | {_fmt(v.p_value, '.3g')} | "
                     f"{_fmt(v.alpha, '.2g')} | {_fmt(v.samples, ',')} | {effect} | "
                     f"{v.duration:.1f} | {v.message.replace('|', '/')} |")
    failed = [v for v in verdicts if v.verdict != "pass"]
    if failed:
        lines += ["", "## Reproduce", ""]
        lines += [f"- `{v.reproduce}`" for v in failed]
    return "\n".join(lines) + "\n"


def write_all(directory: Path, verdicts: list[Verdict], meta: dict) -> None:
    atomic_write(directory / "report.json", to_json(verdicts, meta))
    atomic_write(directory / "junit.xml", to_junit(verdicts))
    atomic_write(directory / "summary.md", to_markdown(verdicts, meta))
