"""The table of scripts/gpu-scale-out.sh: per run, per family, the rate of its largest check.

``scale_out_table.py OUTDIR`` reads OUTDIR/<run>/report.json of every run there and
OUTDIR/times.txt (``<run>: exit C in S s``, written by the script), and prints one Markdown
row per (run, family): the family's largest check (the longest-running), the GPUs that check ran
on (one under --gpus, where each check runs whole on one worker's GPU; the world size when
sharded by torchrun), its seconds, samples, samples/s per GPU, rows/s per GPU where a row
count is known (the fit checks' samples are sampled ids, one per row; the tail's rows are
its scales' rows), and the kernel's own noise draws/s on rank 0's or the worker's GPU.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def rows(check: dict) -> int | None:
    """Rows the kernel sampled (one id each), where the check's details say."""
    scales = check.get("details", {}).get("scales")
    if scales:
        return sum(int(s["rows"]) for s in scales)
    if check.get("check", "").startswith("fit") and check.get("samples"):
        return int(check["samples"])
    return None


def largest(report: dict) -> dict[str, dict]:
    """family -> its longest-running check with a sample count (the one that bounds how far
    spreading the family's checks over GPUs can shorten a run)."""
    best: dict[str, dict] = {}
    for check in report["checks"]:
        if not check.get("samples") or not check.get("duration"):
            continue
        if check["family"] not in best or check["duration"] > best[check["family"]]["duration"]:
            best[check["family"]] = check
    return best


def table(runs: dict[str, dict], times: dict[str, str]) -> list[str]:
    lines = ["| run | wall | family | kernel / check | GPUs | seconds | samples | samples/s/GPU "
             "| rows/s/GPU | kernel draws/s (one GPU) |", "|" + "---|" * 10]
    for name, report in runs.items():
        gpus = int(report.get("world_size") or 1)
        for family, c in sorted(largest(report).items()):
            seconds = float(c["duration"])
            rate = c["samples"] / seconds / gpus
            count = rows(c)
            kernel = c.get("details", {})
            draws = (f"{kernel['kernel_draws'] / kernel['kernel_seconds']:.3g}"
                     if kernel.get("kernel_seconds") else "-")
            lines.append(f"| {name} | {times.get(name, '-')} | {family} | {c['kernel']} / "
                         f"{c['name']} | {gpus} | {seconds:.1f} | {c['samples']:,} | "
                         f"{rate:.3g} | {'-' if count is None else f'{count / seconds / gpus:.3g}'}"
                         f" | {draws} |")
    return lines


def main(out: Path) -> None:
    times = {}
    if (out / "times.txt").exists():
        for line in (out / "times.txt").read_text().splitlines():
            match = re.match(r"(\S+): exit (\d+) in ([\d.]+) s", line)
            if match:
                times[match[1]] = f"{float(match[3]):.0f} s (exit {match[2]})"
    runs = {d.name: json.loads((d / "report.json").read_text())
            for d in sorted(out.iterdir()) if (d / "report.json").exists()}
    print("\n".join(table(runs, times)))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
