"""Do the figures of two bench runs agree? For every (shape, kernel, launch setting) in
both bench.json files: each run's median and min-max, and the ratio of the medians; a row
whose medians differ by more than the tolerance (default 5 %) is flagged, and the exit
status is 1 if any is. Typical use: the same shape timed alone and inside the full table.

Usage: python3 benchmarks/compare_bench.py A/bench.json B/bench.json [--tolerance 0.05]
"""

from __future__ import annotations

import argparse
import json
import sys


def figures(path: str) -> dict:
    """(shape, kernel, launch) -> row, of one bench.json."""
    with open(path) as handle:
        rows = json.load(handle)["rows"]
    return {(r["shape"], r["kernel"], json.dumps(r["launch"], sort_keys=True)): r for r in rows}


def compare(a: dict, b: dict, tolerance: float) -> tuple[list[str], int]:
    """Markdown lines of the rows both runs hold, and how many differ beyond ``tolerance``
    (a row with no figure in either run is listed, never counted)."""
    lines = ["| shape | kernel | launch | A ms (min-max) | B ms (min-max) | B / A |",
             "|---|---|---|---|---|---|"]
    off = 0
    for key in (k for k in a if k in b):
        ra, rb = a[key], b[key]

        def cell(r):
            if r["median_ms"] is None:
                return f"no figure ({r['reason']})"
            return f"{r['median_ms']:.4f} ({r['min_ms']:.4f}-{r['max_ms']:.4f})"

        ratio = (rb["median_ms"] / ra["median_ms"]
                 if ra["median_ms"] and rb["median_ms"] else None)
        flag = ratio is not None and abs(ratio - 1) > tolerance
        off += flag
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {cell(ra)} | {cell(rb)} | "
                     + ("-" if ratio is None else f"{ratio:.3f}") + (" DIFFERS |" if flag
                                                                      else " |"))
    return lines, off


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--tolerance", type=float, default=0.05)
    args = parser.parse_args(argv)
    lines, off = compare(figures(args.a), figures(args.b), args.tolerance)
    if len(lines) == 2:
        print("the two runs hold no common (shape, kernel, launch)", file=sys.stderr)
        return 2
    print("\n".join(lines))
    print(f"{off} of {len(lines) - 2} figures differ by more than {args.tolerance:.0%}")
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
