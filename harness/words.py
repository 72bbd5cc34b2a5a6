"""How the harness words what it tells a user: a count with its noun (``counted``) and the
known names closest to a misspelt one (``did_you_mean``)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with ``noun``, plural (``plural``, default noun + "s") unless the count is
    1: "1 check", "2 checks", "0 checks"."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """"; did you mean 'a' or 'b'?" with the (at most three) names of ``known`` closest to
    ``name`` (difflib's ratio of at least 0.6), or "" where none is that close."""
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
