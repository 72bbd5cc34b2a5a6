"""``sampling-harness reproduce REPORT CHECK``: re-run one check of a recorded run and compare.

A check's seed derives from (harness seed, family, check name) and its sample count from its
share of the false-fail budget (family alpha / statistical checks), so a re-run with the
recorded harness seed, budget, device, family alpha and statistical-check count draws the same
random bits: on the same device its statistic must equal the recorded one, bit for bit.
Floats are compared exactly or within ``REL_TOL`` relative (a last-digit slack, not a
tolerance for a different computation). Exit 0: the same; 1: it differs; 2: no run.

The recorded check is found by its family's declaration (``sampling_harness.families.Check``) and
re-run alone: its suite file and test function, no ``-k`` substring match.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES, declaring_files
from sampling_harness.families.registry import load
from sampling_harness.options import TOOLS, RunOptions, add_to_argparse
from sampling_harness.report.schema import CHECK_FIELDS, as_float, read_report, report_path
from sampling_harness.run.sanitize import require_tool
from sampling_harness.words import counted, did_you_mean

REL_TOL = 1e-9


def add_arguments(parser) -> None:
    parser.add_argument("report", metavar="REPORT.json", help="a run's report.json (or its dir)")
    parser.add_argument("check", metavar="CHECK", help="the check's name in the report, e.g. "
                                                       "fit_curated or validity_memcheck")
    add_to_argparse(parser, ("kernel", "report_dir"), kernel={
        "action": "store", "default": None, "metavar": "NAME",
        "help": "which kernel's verdict, when the report checked several"})


def same_value(old, new, rel_tol: float = REL_TOL) -> bool:
    """Equal numbers: both absent, both NaN, or |old - new| <= rel_tol * max(|old|, |new|)
    (so 0 matches only 0, and infinities only themselves)."""
    old, new = as_float(old), as_float(new)
    if old is None or new is None:
        return old is new
    if math.isnan(old) or math.isnan(new):
        return math.isnan(old) and math.isnan(new)
    return math.isclose(old, new, rel_tol=rel_tol, abs_tol=0.0)


def differences(old: dict, new: dict) -> list[str]:
    """How the new verdict differs from the recorded one (statistic, p-value, verdict)."""
    found = []
    for key in ("statistic", "p_value"):
        if not same_value(old[key], new[key]):
            a, b = as_float(old[key]), as_float(new[key])
            how = ""
            if a is not None and b is not None and math.isfinite(a) and math.isfinite(b):
                how = f" (new - old = {b - a:.6g}, relative {abs(b - a) / max(abs(a), abs(b)):.3g})"
            found.append(f"{key} {old[key]!r} -> {new[key]!r}{how}")
    if old["verdict"] != new["verdict"]:
        found.append(f"verdict {old['verdict']} -> {new['verdict']}")
    return found


def find_verdict(report: dict, check: str, kernel: str | None, path: Path) -> dict:
    """The one verdict named ``check`` (of ``kernel``, by name or target, if given)."""
    named = [c for c in report["checks"] if c["name"] == check]
    if not named:
        known = ", ".join(sorted({c["name"] for c in report["checks"]})) or "none"
        raise HarnessError(f"{path} has no check {check!r}"
                           f"{did_you_mean(check, {c['name'] for c in report['checks']})} "
                           f"(its checks: {known})")
    if kernel is not None:
        named = [c for c in named if kernel in (c["kernel"], c["target"])]
        if not named:
            raise HarnessError(f"{path} has no check {check!r} of kernel {kernel!r}")
    kernels = sorted({c["kernel"] for c in named})
    if len(kernels) > 1:
        raise HarnessError(f"{path} has {check!r} for several kernels; name one with --kernel: "
                           f"{', '.join(kernels)}")
    return named[-1]


def sanitizer(verdict: dict) -> str | None:
    """The compute-sanitizer tool of a sanitized verdict (name ``<check>_<tool>``), or None."""
    tool = verdict["name"].removeprefix(f"{verdict['check']}_")
    return tool if verdict["name"] != verdict["check"] and tool in TOOLS else None


def check_node(verdict: dict) -> str:
    """The pytest node of the verdict's check: its family's declaring module and the check's
    test item (``-k test_fit`` would be a substring match, running fit_curated and the others
    too)."""
    family = FAMILIES.get(verdict["family"])
    if family is None:
        raise HarnessError(f"the report's family {verdict['family']!r} is unknown here; known: "
                           f"{', '.join(FAMILIES)}")
    declared = family.check(verdict["check"])
    return f"{declaring_files()[family.name]}::{declared.test_name}[{verdict['kernel']}]"


def pytest_args(report: dict, verdict: dict, report_dir: Path) -> list[str]:
    """The pytest command line of the recorded run, for this check's kernel only."""
    import torch

    pinned = report["statistical_checks"]
    return [check_node(verdict), *RunOptions(
        kernel=(verdict["target"],), budget=report["budget"],
        device=torch.device(report["device"]).type, seed=report["harness_seed"],
        family_alpha=float(report["family_alpha"]), report_dir=report_dir,
        statistical_checks=pinned if pinned > 0 else None,   # 0: exact checks only
        sanitize=sanitizer(verdict)).plugin_args()]


def _show(value) -> str:
    """Floats in full (repr round-trips them), other values as they read."""
    return "-" if value is None else repr(value) if isinstance(value, float) else str(value)


def side_by_side(old: dict, new: dict) -> str:
    rows = [("", "original", "new")] + [
        (label, _show(old[key]), _show(new[key])) for label, key in
        (("statistic", "statistic"), ("p-value", "p_value"), ("alpha", "alpha"),
         ("verdict", "verdict"), ("samples", "samples"), ("seed", "seed"))]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)


def run_reproduce(args, report_dir: Path) -> int:
    import torch

    from sampling_harness.device import resolve_device
    from sampling_harness.report.writers import writable

    path = report_path(args.report)
    report = read_report(path, CHECK_FIELDS + ("target", "check"))
    old = find_verdict(report, args.check, args.kernel, path)
    if (report_dir / "report.json").exists():
        raise HarnessError(f"{report_dir} already holds a report.json; give another --report-dir")
    world = int(report.get("world_size") or 1)
    if world != int(os.environ.get("WORLD_SIZE", "1")):
        raise HarnessError(f"{path} was sharded over {world} torchrun ranks: its draws are one "
                           f"sample of {world} ranks' streams, so reproduce it under torchrun "
                           f"with --nproc-per-node {world} (the check's reproduce command: "
                           f"{old.get('reproduce') or 'see its report'})")
    try:        # before any folder is made: a kernel that does not load is said in one line
        load(old["target"], old["family"])
    except HarnessError as exc:
        where = " (a path is read from the directory the run started in: reproduce from " \
            "there)" if ".py:" in old["target"] else ""
        raise HarnessError(f"the report's kernel does not load here: {exc}{where}") from None
    pytest_argv = pytest_args(report, old, report_dir)
    device = resolve_device(torch.device(report["device"]).type)   # this machine has one?
    if sanitizer(old):
        require_tool(sanitizer(old), device)
    writable(report_dir)
    print(f"reproduce {old['family']} / {old['kernel']} / {old['name']} of {path}: harness seed "
          f"{report['harness_seed']}, budget {report['budget']}, device {report['device']}, "
          f"family alpha {report['family_alpha']} over "
          f"{counted(report['statistical_checks'], 'statistical check')}")

    import pytest

    from sampling_harness.run.guest import run_pytest

    code = run_pytest(pytest_argv)
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        raise HarnessError(f"{pytest_argv[0]} ran nothing for kernel {old['target']!r}")
    new_path = report_dir / "report.json"
    if not new_path.exists():
        raise HarnessError(f"the re-run recorded no verdict (pytest exit {int(code)}: "
                           f"{getattr(code, 'name', code)})")
    new = [c for c in read_report(new_path)["checks"] if c["name"] == old["name"]]
    if not new:
        raise HarnessError(f"the re-run recorded no verdict {old['name']!r}; see {report_dir}/")
    print(side_by_side(old, new[-1]))
    changed = differences(old, new[-1])
    print(f"report: {report_dir}/ (report.json, junit.xml, summary.md)")
    if changed:
        print("NOT REPRODUCED: " + "; ".join(changed))
        return 1
    statistic = "no statistic (an exact check)" if old["statistic"] is None else \
        f"the same statistic {_show(old['statistic'])}"
    print(f"reproduced: {statistic} and verdict {old['verdict']}")
    return 0
