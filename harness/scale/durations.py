"""Check durations remembered between runs, so that workers start the longest checks first.

A run on several workers lasts at least as long as its longest check, and longer when that
check starts late: ordering the checks longest first (the LPT rule) keeps the run's wall
time near max(longest check, total / workers). Durations are only known after a run, so
each run remembers its checks' seconds, per device type and budget, in one small JSON file
(``cache_path``: $SAMPLING_HARNESS_CACHE, else $XDG_CACHE_HOME/sampling-harness, else
~/.cache/sampling-harness), and the next run's workers read it when they order their
collection. A first run on a fresh machine (a GPU CI runner) has no such file: it orders
the checks by the durations shipped with the harness (``measured``: one full run per device
type and budget, the machine named in the file, keyed "kernel/check"), as pytest-split's
committed durations do. A check timed nowhere keeps the static order
(sampling_harness.scale.schedule). A
file that cannot be read or written is ignored: the order is a matter of speed, never of
verdicts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE = "durations.json"
MEASURED = Path(__file__).with_name("durations_measured.json")


def cache_path() -> Path:
    """Where the durations live (module docstring)."""
    root = os.environ.get("SAMPLING_HARNESS_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        root = Path(base) / "sampling-harness"
    return Path(root) / FILE


def _read(path: Path | None = None) -> dict:
    """The JSON document at ``path`` (default: the cache), or {}."""
    try:
        document = json.loads((path or cache_path()).read_text())
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def remembered(device_type: str, budget: str) -> dict[str, float]:
    """{check node id: seconds} of the latest runs on this device type at this budget."""
    return _seconds(_read(), device_type, budget)


def measured(device_type: str, budget: str) -> dict[str, float]:
    """{"kernel/check": seconds} shipped with the harness (``MEASURED``), or {}."""
    return _seconds(_read(MEASURED), device_type, budget)


def _seconds(document: dict, device_type: str, budget: str) -> dict[str, float]:
    """The numeric entries of one device type's and budget's table of ``document``."""
    table = document.get(f"{device_type}/{budget}", {})
    return {k: float(v) for k, v in table.items() if isinstance(v, int | float)} \
        if isinstance(table, dict) else {}


def remember(device_type: str, budget: str, seconds: dict[str, float]) -> None:
    """Merge these checks' seconds into the file (written whole, then renamed: a reader
    never sees half a file)."""
    if not seconds:
        return
    document = _read()
    table = document.setdefault(f"{device_type}/{budget}", {})
    table.update({k: round(v, 2) for k, v in seconds.items()})
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(document, indent=0, sort_keys=True))
        partial.replace(path)
    except OSError:
        pass
