"""``sampling-harness compare A B``: the checks of two reports side by side.

Rows are the checks keyed by (family, kernel, check), outer-joined: a check of A only is
"gone", of B only "new". For a kernel author's before and after (A ran ``--kernel
old.py:fn``, B ``--kernel new.py:fn``) the kernel names differ; when each report holds exactly
one kernel per family, rows are matched by (family, check) instead, and the output says so.

The change column: a changed verdict (``pass->fail``, ``fail->pass``, ...), ``new``, ``gone``;
else how far the p-value moved, in decades: log10(p_B / p_A) (negative: B's evidence against
the kernel is stronger). A p-value is Bonferroni-adjusted within its check and capped at 1,
so most passing checks read 1 in both and "same". Changed verdicts come first.
Exit 0 whatever the verdicts (a report); 2 on bad input.
"""

from __future__ import annotations

import math
from pathlib import Path

from sampling_harness.errors import HarnessError
from sampling_harness.report.schema import as_float, read_report, report_path
from sampling_harness.words import counted

WORSE = {("pass", "fail"), ("pass", "error"), ("fail", "error")}
COLUMNS = ("verdict", "p_value", "statistic", "samples", "min_detectable_effect", "alpha")


def add_arguments(parser) -> None:
    parser.add_argument("a", metavar="A/report.json", help="the earlier run (or its dir)")
    parser.add_argument("b", metavar="B/report.json", help="the later run (or its dir)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="also write DIR/compare.csv and DIR/compare.md")


def checks_frame(report: dict):
    """One row per verdict: family, kernel, check (the verdict's name) and its numbers."""
    import pandas as pd
    rows = [{"family": c["family"], "kernel": c["kernel"], "check": c["name"],
             **{k: (c[k] if k == "verdict" else as_float(c[k])) for k in COLUMNS}}
            for c in report["checks"]]
    frame = pd.DataFrame(rows, columns=["family", "kernel", "check", *COLUMNS])
    frame["samples"] = frame["samples"].astype("Int64")
    return frame.drop_duplicates(["family", "kernel", "check"], keep="last")


def one_kernel_per_family(a, b) -> bool:
    """True when each report ran exactly one kernel in each of its families."""
    return all(frame.groupby("family")["kernel"].nunique().le(1).all() for frame in (a, b))


def decades(p_a: float | None, p_b: float | None) -> float:
    """log10(p_B / p_A): how many powers of ten the p-value moved (NaN when either is
    missing; -inf / +inf when one is 0)."""
    if p_a is None or p_b is None or math.isnan(p_a) or math.isnan(p_b):
        return math.nan
    if p_a == p_b:
        return 0.0
    if p_a == 0 or p_b == 0:
        return -math.inf if p_b == 0 else math.inf
    return math.log10(p_b / p_a)


def change(verdict_a, verdict_b, moved: float) -> str:
    """The change column: verdict change, new, gone, or the p-value's move in decades."""
    if not isinstance(verdict_a, str):
        return "new"
    if not isinstance(verdict_b, str):
        return "gone"
    if verdict_a != verdict_b:
        return f"{verdict_a}->{verdict_b}"
    if math.isnan(moved):
        return "same verdict"
    return "p-value same" if moved == 0 else f"p-value {moved:+.1f} decades"


def _rank(verdict_a, verdict_b) -> int:
    """Sort order: worse verdicts, better verdicts, new, gone, unchanged."""
    if not isinstance(verdict_a, str):
        return 2
    if not isinstance(verdict_b, str):
        return 3
    if verdict_a == verdict_b:
        return 4
    return 0 if (verdict_a, verdict_b) in WORSE else 1


def _kernels(kernel_a, kernel_b) -> str:
    """The kernel cell of a row matched by (family, check): "A -> B" when renamed."""
    names = [k for k in (kernel_a, kernel_b) if isinstance(k, str)]
    return names[0] if len(set(names)) == 1 else " -> ".join(names)


def compare_frames(a, b):
    """The outer join of two ``checks_frame``s; returns (table, note on how rows matched)."""
    import pandas as pd
    note = "matched by (family, kernel, check)"
    keys = ["family", "kernel", "check"]
    if one_kernel_per_family(a, b):
        kernels_a = dict(zip(a["family"], a["kernel"], strict=True))
        kernels_b = dict(zip(b["family"], b["kernel"], strict=True))
        renamed = {f: (kernels_a[f], kernels_b[f]) for f in kernels_a.keys() & kernels_b.keys()
                   if kernels_a[f] != kernels_b[f]}
        if renamed:
            keys = ["family", "check"]
            note = ("matched by (family, check): each report holds one kernel per family; "
                    + "; ".join(f"{f}: {x} -> {y}" for f, (x, y) in sorted(renamed.items())))
    table = pd.merge(a, b, on=keys, how="outer", suffixes=("_a", "_b"))
    if "kernel" not in keys:
        table["kernel"] = [_kernels(x, y) for x, y in
                           zip(table["kernel_a"], table["kernel_b"], strict=True)]
        table = table.drop(columns=["kernel_a", "kernel_b"])
    pairs = list(zip(table["verdict_a"], table["verdict_b"], strict=True))
    table["decades"] = [decades(x, y) for x, y in
                        zip(table["p_value_a"], table["p_value_b"], strict=True)]
    table["change"] = [change(x, y, d) for (x, y), d in zip(pairs, table["decades"], strict=True)]
    table["_rank"] = [_rank(x, y) for x, y in pairs]
    table["_moved"] = -table["decades"].abs().fillna(-1.0)
    table = table.sort_values(["_rank", "_moved", "family", "kernel", "check"])
    order = ["family", "kernel", "check", "change", "verdict_a", "verdict_b", "p_value_a",
             "p_value_b", "decades", "statistic_a", "statistic_b", "samples_a", "samples_b",
             "min_detectable_effect_a", "min_detectable_effect_b", "alpha_a", "alpha_b"]
    return table[order].reset_index(drop=True), note


def _cell(value, spec: str = ".4g") -> str:
    if value is None:
        return "-"
    return value.replace("|", "/") if isinstance(value, str) else format(value, spec)


def _pair(x, y, spec: str = ".4g") -> str:
    a, b = _cell(x, spec), _cell(y, spec)
    return a if a == b else f"{a} / {b}"


def to_markdown(table, header: list[str]) -> str:
    """The table as Markdown (verdicts A -> B, numbers "A / B" or one value when equal)."""
    lines = [*header, "", "| family | kernel | check | verdict A -> B | p-value A / B | "
             "statistic A / B | samples | min. detectable effect | change |",
             "|---|---|---|---|---|---|---|---|---|"]
    table = table.astype(object).where(table.notna(), None)
    for r in table.itertuples(index=False):
        verdicts = f"{_cell(r.verdict_a)} -> {_cell(r.verdict_b)}"
        lines.append(f"| {r.family} | {_cell(r.kernel)} | {r.check} | {verdicts} | "
                     f"{_pair(r.p_value_a, r.p_value_b, '.3g')} | "
                     f"{_pair(r.statistic_a, r.statistic_b, '.6g')} | "
                     f"{_pair(r.samples_a, r.samples_b, ',')} | "
                     f"{_pair(r.min_detectable_effect_a, r.min_detectable_effect_b, '.3g')} | "
                     f"**{r.change}** |")
    return "\n".join(lines) + "\n"


def _describe(label: str, path: Path, report: dict) -> str:
    return (f"- {label}: `{path}`: {report['verdict']}, budget `{report['budget']}`, device "
            f"`{report['device']}`, harness seed `{report['harness_seed']}`, "
            f"{counted(len(report['checks']), 'check')}")


def run_compare(args) -> int:
    from sampling_harness.report.writers import atomic_write, writable

    path_a, path_b = report_path(args.a), report_path(args.b)
    report_a, report_b = read_report(path_a), read_report(path_b)
    table, note = compare_frames(checks_frame(report_a), checks_frame(report_b))
    counts = table["change"].map(lambda c: c if c in ("new", "gone") else
                                 "verdict changed" if "->" in c else "same verdict")
    tally = ", ".join(f"{(counts == what).sum()} {what}" for what in
                      ("verdict changed", "new", "gone", "same verdict") if (counts == what).any())
    header = ["# sampling-harness compare", "", _describe("A", path_a, report_a),
              _describe("B", path_b, report_b), "",
              f"{counted(len(table), 'check')} ({tally}); {note}."]
    for key in ("budget", "device", "family_alpha", "statistical_checks"):
        if report_a[key] != report_b[key]:
            header.append(f"Note: {key} differs ({report_a[key]} vs {report_b[key]}): samples "
                          "and p-values are not comparable one to one.")
    text = to_markdown(table, header)
    if args.out:
        out = Path(args.out)
        writable(out)
        try:
            atomic_write(out / "compare.md", text)
            atomic_write(out / "compare.csv", table.to_csv(index=False))
        except OSError as exc:
            raise HarnessError(f"cannot write the comparison to {out}: "
                               f"{exc.strerror or exc}") from None
    print(text, end="")
    if args.out:
        print(f"\nwritten: {args.out}/compare.csv, {args.out}/compare.md")
    return 0
