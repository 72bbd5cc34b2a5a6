"""Reading a report.json back: its schema checked, every fault one ``HarnessError`` line
naming the file. Shared by ``reproduce``, ``compare``, ``calibrate`` and ``selftest``; the
writer is ``sampling_harness.report.writers.to_json``."""

from __future__ import annotations

import json
from pathlib import Path

from sampling_harness.errors import HarnessError

VERDICTS = ("pass", "fail", "error")
_NUMBER_STRINGS = ("nan", "inf", "-inf")          # how reports.py writes non-finite floats
RUN_FIELDS = {"verdict": str, "budget": str, "device": str, "harness_seed": int,
              "family_alpha": (int, float), "statistical_checks": int, "checks": list}
CHECK_FIELDS = ("name", "family", "kernel", "verdict", "statistic", "p_value", "alpha",
                "samples", "min_detectable_effect", "seed")
NUMERIC_FIELDS = ("statistic", "p_value", "alpha", "samples", "min_detectable_effect")


def report_path(given: str | Path) -> Path:
    """A report.json, or a report directory holding one."""
    path = Path(given)
    return path / "report.json" if path.is_dir() else path


def as_float(value) -> float | None:
    """A report number as a float: None stays None; "nan", "inf", "-inf" (JSON has no
    non-finite floats, so reports write them as strings) become floats."""
    if value is None:
        return None
    return float(value)


def _is_number(value) -> bool:
    return value is None or value in _NUMBER_STRINGS or (
        isinstance(value, (int, float)) and not isinstance(value, bool))


def read_report(given: str | Path, fields: tuple[str, ...] = CHECK_FIELDS) -> dict:
    """Parse and check a report.json; every fault is one ``HarnessError`` line naming the
    file: missing, empty, not JSON, truncated, or not the schema of ``reports.to_json``."""
    path = report_path(given)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessError(f"{path}: no such report") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read the report: {exc}") from None
    if not text.strip():
        raise HarnessError(f"{path}: the report is empty")
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            raise HarnessError(f"{path}: truncated report: the JSON ends at line {exc.lineno} "
                               f"before it is complete ({exc.msg})") from None
        raise HarnessError(f"{path}: not a JSON report: {exc.msg} at line {exc.lineno} "
                           f"column {exc.colno}") from None
    if not isinstance(body, dict):
        raise HarnessError(f"{path}: not a sampling-harness report (a JSON "
                           f"{type(body).__name__}, not an object)")
    for key, kind in RUN_FIELDS.items():
        if key not in body:
            raise HarnessError(f"{path}: not a sampling-harness report: no {key!r} field")
        if not isinstance(body[key], kind) or isinstance(body[key], bool):
            raise HarnessError(f"{path}: wrong schema: {key!r} is {body[key]!r}")
    for i, check in enumerate(body["checks"]):
        where = f"{path}: wrong schema: checks[{i}]"
        if not isinstance(check, dict):
            raise HarnessError(f"{where} is a {type(check).__name__}, not an object")
        missing = [f for f in fields if f not in check]
        if missing:
            raise HarnessError(f"{where} has no {', '.join(map(repr, missing))}")
        if check["verdict"] not in VERDICTS:
            raise HarnessError(f"{where} has verdict {check['verdict']!r}, not pass|fail|error")
        for key in NUMERIC_FIELDS:
            if key in check and not _is_number(check[key]):
                raise HarnessError(f"{where} has {key} {check[key]!r}, not a number")
    return body
