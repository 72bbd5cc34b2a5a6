"""Guard-band cost of a run: sum of each check's details.guard_seconds over its duration.

Usage: python3 benchmarks/guard_cost.py REPORT_DIR/report.json  (prints per family and in total)
"""
import collections
import json
import sys

checks = json.load(open(sys.argv[1]))["checks"]
guard, total = collections.Counter(), collections.Counter()
for check in checks:
    for key in (check["family"], "all"):
        guard[key] += check.get("details", {}).get("guard_seconds", 0.0)
        total[key] += check["duration"]
for key in total:
    share = guard[key] / total[key] if total[key] else 0.0
    print(f"{key:14s} guard {guard[key]:8.2f} s of {total[key]:8.2f} s = {100 * share:5.2f} %")
