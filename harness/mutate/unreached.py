"""The reach report: which lines of a kernel's ``@triton.jit`` code no check of a budget runs.

``sampling-harness mutate FAMILY --kernel K --reach`` runs the original's instrumented check
run alone (harness/mutate/session.py, ``record_original``) and reports every line that holds
a mutation site and never ran (harness/mutate/coverage.py, ``reached``). A mutant on such a
line is ``dead`` in a mutate run: it would survive every check, and no check could say
whether the line is right. The report is the list of those lines, so that each one is either
reached by a strategy of the family's suite or removed.

Two measures, as coverage.py gives them:

* interpreted (a CPU run under ``TRITON_INTERPRET=1``): a line ran when its probe fired, so a
  runtime branch that no program takes is unreached;
* compiled (a GPU run): a line ran when a compiled kernel holds an instruction of its block,
  so only ``tl.constexpr`` branches no launch takes and code the compiler removed are
  unreached. The interpreted measure is the stricter one; it is the one the project's
  kernels are held to.
"""

from __future__ import annotations

import json
import os

from sampling_harness.mutate.coverage import reached
from sampling_harness.mutate.operators import Site
from sampling_harness.mutate.reach import Reach
from sampling_harness.words import counted


def unreached_lines(found: Reach, sites: list[Site], coverage: dict,
                    jit: bool = True) -> dict[str, list[int]]:
    """Original file -> the sorted lines that hold a site of ``@triton.jit`` code (``jit``)
    or of host code (not ``jit``) none of whose sites ran; files with none are left out."""
    ran: dict[tuple[str, int], bool] = {}
    for site in sites:
        if site.jit == jit:
            key = (site.path, site.line)
            ran[key] = ran.get(key, False) or reached(site, coverage)
    lines: dict[str, list[int]] = {}
    for (path, line), was_run in sorted(ran.items()):
        if not was_run:
            lines.setdefault(path, []).append(line)
    return lines


def site_lines(sites: list[Site], jit: bool = True) -> int:
    """How many distinct lines hold a site of ``@triton.jit`` code (``jit``) or of host code."""
    return len({(s.path, s.line) for s in sites if s.jit == jit})


def report(found: Reach, sites: list[Site], coverage: dict, meta: dict) -> dict:
    """The reach report as report.json's document: the run, the measure, the unreached
    lines with their text, of ``@triton.jit`` code and of host code."""
    texts = {m.path: m.text.splitlines() for m in found.modules.values()}

    def listed(lines: dict[str, list[int]]) -> list[dict]:
        return [{"file": shown(path), "line": line, "text": texts[path][line - 1].strip()}
                for path, numbers in lines.items() for line in numbers]

    return {**meta, "measure": "interpreted" if coverage.get("interpreted") else "compiled",
            "jit_lines": site_lines(sites), "host_lines": site_lines(sites, False),
            "unreached": listed(unreached_lines(found, sites, coverage)),
            "unreached_host": listed(unreached_lines(found, sites, coverage, False))}


def shown(path: str) -> str:
    """``path`` relative to the working directory where it lies below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def to_markdown(document: dict) -> str:
    """summary.md: the headline and a table of the unreached lines."""
    head = (f"# Reach of {document['kernel']} ({document['family']}) at "
            f"{document['budget']} on {document['device']}\n\n"
            f"{headline(document)}\n")
    if not document["unreached"]:
        return head
    rows = "\n".join(f"| {u['file']} | {u['line']} | `{u['text']}` |"
                     for u in document["unreached"])
    return f"{head}\n| file | line | text |\n|---|---:|---|\n{rows}\n"


def headline(document: dict) -> str:
    """One line: how many ``@triton.jit`` lines never ran, of how many, by which measure."""
    missed = len(document["unreached"])
    host = len(document["unreached_host"])
    return (f"reach ({document['measure']}): {missed} of "
            f"{counted(document['jit_lines'], 'line')} of @triton.jit code never ran"
            f"{'' if missed else ': every line is reached'}; host code: "
            f"{host} of {document['host_lines']} unreached")


def terminal_lines(document: dict) -> list[str]:
    """What the terminal shows: each unreached ``@triton.jit`` line, then the headline."""
    return [f"  unreached {u['file']}:{u['line']}  {u['text']}"
            for u in document["unreached"]] + [headline(document)]


def to_json(document: dict) -> str:
    return json.dumps(document, indent=1) + "\n"
