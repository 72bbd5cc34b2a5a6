"""``sampling-harness calibrate FAMILY --kernel K --runs N``: measure what the checks promise.

Runs N harness seeds S, S+1, ..., S+N-1, each a ``sampling-harness check`` subprocess with its
own report dir DIR/runs/seed-<s>/, J at a time, and collects every check's verdict and p-value
(DIR/runs.csv). Each check's random bits derive from the harness seed, so its N verdicts are N
independent Bernoulli trials.

On a correct kernel a fail is a false fail: its rate must not exceed the check's alpha (for
the whole run, the family alpha), and its p-values must not be smaller than uniform. On a
mutant a fail is a detection: the rate is the check's power. Errors (verdict error, a run that
exited 2 or crashed) are counted apart and never as passes. Writes DIR/summary.csv and
DIR/summary.md. Resumable: seeds whose report.json is complete are not run again.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path

from sampling_harness.budgets import BUDGET_NAMES
from sampling_harness.errors import HarnessError
from sampling_harness.families import family_names
from sampling_harness.families.registry import load
from sampling_harness.options import add_to_argparse, cli_args, positive
from sampling_harness.report.schema import as_float, read_report

RUN = "(whole run)"
CONFIG = ("family", "kernel", "budget", "device", "select", "family_alpha",
          "statistical_checks")


def add_arguments(parser) -> None:
    parser.add_argument("family", choices=family_names())
    add_to_argparse(parser, ("kernel",), kernel={"action": "store", "default": None,
                                                 "required": True, "help": None})
    parser.add_argument("--runs", type=positive(int), required=True, metavar="N")
    add_to_argparse(parser, ("budget", "device"))
    parser.add_argument("--workers", type=positive(int), default=os.cpu_count() or 1, metavar="J")
    parser.add_argument("--first-seed", type=int, default=1, metavar="S")
    add_to_argparse(parser, ("select", "family_alpha", "statistical_checks"), family_alpha={
        "default": None, "help": "passed to each run (a larger one makes false fails "
                                 "measurable; default: check's own)"})
    parser.add_argument("--out", default=None, metavar="DIR", help="default: reports/<timestamp>/")


def rate_interval(fails: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a false-fail or power rate
    (``stats.binomial.clopper_pearson``). With k = 0 the upper end is 1 - (a/2)^(1/n) ~ 3.7/n:
    showing a rate below alpha takes n > ~3.7/alpha runs. (NaN, NaN) when there are no
    trials."""
    from sampling_harness.stats.binomial import clopper_pearson

    if trials == 0:
        return math.nan, math.nan
    return clopper_pearson(fails, trials, confidence)


def ks_uniform(p_values) -> tuple[float, float]:
    """Kolmogorov-Smirnov tests of p-values against U(0, 1): (one-sided p, two-sided p).

    One-sided, ``alternative="greater"``: H1 is F(t) > t for some t (F the p-values' CDF), i.e.
    p-values stochastically smaller than uniform: an anti-conservative check that fails correct
    kernels more often than its alpha, the dangerous direction. Two-sided: any departure. The
    checks' p-values are Bonferroni-adjusted (min(1, m min p)), stochastically larger than
    uniform (conservative, with mass at 1), so a two-sided rejection alone is expected, not a
    defect. (NaN, NaN) without p-values."""
    values = [p for p in p_values if not math.isnan(p)]
    if not values:
        return math.nan, math.nan
    from scipy.stats import kstest
    return (float(kstest(values, "uniform", alternative="greater").pvalue),
            float(kstest(values, "uniform").pvalue))


def fraction_below(p_values, threshold: float) -> float:
    """Fraction of p-values < threshold: t for uniform p-values, at most t if conservative."""
    values = [p for p in p_values if not math.isnan(p)]
    return sum(p < threshold for p in values) / len(values) if values else math.nan


def expectation(meta: dict, check: str, recorded: str) -> str:
    """What a fail of ``check`` means: "pass" expected (a fail is a false fail), "fail"
    expected (a fail is a detection: the rate is power) or "either". A mutant must fail its
    caught_by checks and its run; others follow the verdict's recorded expectation (a
    baseline's stated one; "pass" for a kernel and for a whole run, judged as expected)."""
    if meta["role"] == "mutant":
        promised = meta.get("budget", "smoke")   # no power promised below the mutant's budget
        below = BUDGET_NAMES.index(meta.get("calibrated_budget", promised)) < \
            BUDGET_NAMES.index(promised)
        caught = check == RUN or check in meta.get("caught_by", ())
        return "fail" if caught and not below else "either"
    return recorded if isinstance(recorded, str) else "pass"


def _passed_on(args) -> list[str]:
    """The options each run gets as given: -k, --family-alpha, --statistical-checks."""
    return cli_args({"select": args.select, "family_alpha": args.family_alpha,
                     "statistical_checks": args.statistical_checks})


def check_command(args, seed: int, directory: Path) -> list[str]:
    """The ``check`` run of harness seed ``seed``, its reports in ``directory``."""
    return [sys.executable, "-m", "sampling_harness", "check", args.family, *cli_args({
        "kernel": [args.kernel], "budget": args.budget, "device": args.device, "seed": seed,
        "report_dir": directory}), *_passed_on(args)]


def completed(directory: Path) -> bool:
    """A run already done: its report.json reads and says complete."""
    try:
        return read_report(directory / "report.json").get("complete") is True
    except HarnessError:
        return False


def run_one(command: list[str], directory: Path, threads: int) -> dict:
    """One check subprocess; its exit code and last stderr line go to DIR/runs/seed-s/exit.json."""
    from sampling_harness.report.writers import atomic_write

    (directory / "report.json").unlink(missing_ok=True)      # an incomplete earlier try
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(threads))
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        code, last = done.returncode, (done.stderr.strip().splitlines() or [""])[-1]
    except OSError as exc:
        code, last = -1, str(exc)
    record = {"exit_code": code, "stderr": last, "seconds": round(time.perf_counter() - started, 1),
              "command": shlex.join(command)}
    atomic_write(directory / "exit.json", json.dumps(record, indent=1))
    return record


def collect(out: Path, seeds: list[int]):
    """runs.csv: one row per (seed, check), and a ``(whole run)`` row per seed whose verdict is
    the run's, or error when it exited other than 0/1, crashed or left no complete report."""
    import pandas as pd
    rows = []
    for seed in seeds:
        directory = out / "runs" / f"seed-{seed}"
        exit_file = directory / "exit.json"
        code = json.loads(exit_file.read_text()).get("exit_code") if exit_file.exists() else None
        try:
            report, why = read_report(directory / "report.json"), ""
        except HarnessError as exc:
            report, why = None, str(exc)
        base = {"seed": seed, "exit_code": code, "run_dir": str(directory)}
        for c in (report or {}).get("checks", []):
            rows.append({**base, "check": c["name"], "verdict": c["verdict"],
                         "p_value": as_float(c["p_value"]), "alpha": as_float(c["alpha"]),
                         "statistic": as_float(c["statistic"]), "samples": c["samples"],
                         "expected": c.get("expected", "pass"),
                         "device": c.get("device"), "message": c.get("message", "")})
        broken = report is None or report.get("complete") is not True or code not in (0, 1, None)
        rows.append({**base, "check": RUN, "verdict": "error" if broken else report["verdict"],
                     "p_value": math.nan, "alpha": report["family_alpha"] if report else math.nan,
                     "statistic": math.nan, "samples": None, "expected": "pass",
                     "device": report["device"] if report else None,
                     "message": why or ("" if not broken else f"exit {code}, incomplete report")})
    runs = pd.DataFrame(rows)
    runs["samples"] = runs["samples"].astype("Int64")
    return runs


def _findings(expect: str, role: str, fails: int, trials: int, low: float, alpha: float,
              ks_one: float, ks_two: float) -> str:
    """What a summary row says. Expected to fail: whether it missed. Expected to pass: a
    false-fail rate above design (the interval's lower end above alpha; for an exact check,
    alpha = 0, any fail) or p-values off uniform (KS p < 0.01)."""
    if expect == "fail":
        missed = f": missed in {trials - fails} of {trials} runs" if fails < trials else ""
        return ("must catch it" if role == "mutant" else "stated to fail") + missed
    if expect == "either":
        return "power not promised at this budget" if role == "mutant" and fails < trials \
            else "" if role == "mutant" else "stated: may fail"
    found = []
    if low > alpha:
        found.append(f"exact check failed a {role}" if alpha == 0
                     else "false-fail rate above the design alpha")
    if ks_one < 0.01:
        found.append("p-values anti-conservative (smaller than uniform)")
    elif ks_two < 0.01:
        found.append("p-values conservative (expected of Bonferroni)")
    return "; ".join(found) or "consistent with design"


def summarize(runs, meta: dict):
    """Per check (and the whole run): errors apart, fails among decided runs, the rate with
    its exact 95% interval, the designed alpha (0 for exact checks), KS of the p-values."""
    import pandas as pd
    rows = []
    for check, group in runs.groupby("check", sort=False):
        decided = group[group["verdict"].isin(["pass", "fail"])]
        fails, trials = int((decided["verdict"] == "fail").sum()), len(decided)
        low, high = rate_interval(fails, trials)
        alphas = group["alpha"].dropna()
        alpha = float(alphas.iloc[0]) if len(alphas) else 0.0
        p_values = [float(p) for p in decided["p_value"].dropna()]
        ks_one, ks_two = ks_uniform(p_values)
        expect = expectation(meta, check, group["expected"].iloc[0])
        rows.append({"check": check, "expected": expect, "runs": len(group),
                     "errors": int((group["verdict"] == "error").sum()), "decided": trials,
                     "fails": fails, "rate": fails / trials if trials else math.nan,
                     "ci_low": low, "ci_high": high, "alpha": alpha,
                     "ks_anticonservative_p": ks_one, "ks_two_sided_p": ks_two,
                     "p_below_0.1": fraction_below(p_values, 0.1),
                     "p_below_0.5": fraction_below(p_values, 0.5),
                     "finding": _findings(expect, meta["role"], fails, trials, low, alpha,
                                          ks_one, ks_two)})
    return pd.DataFrame(rows)


def _g(value, spec=".3g") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else format(value, spec)


def to_markdown(summary, role: str, header: list[str]) -> str:
    """The summary table; a mutant's leaves out the p-value uniformity (power is the point),
    a kernel's the expectations (all "pass")."""
    mutant = role == "mutant"
    rate = {"mutant": "power (fail rate)", "kernel": "false-fail rate"}.get(role, "fail rate")
    titles = ["check"] + ([] if role == "kernel" else ["expected"]) + [
        "runs", "errors", "fails", rate, "95% interval", "designed alpha"] + ([] if mutant else [
        "KS p (anti-conservative)", "KS p (two-sided)", "p<0.1", "p<0.5"]) + ["finding"]
    lines = [*header, "", "| " + " | ".join(titles) + " |", "|---" * len(titles) + "|"]
    for r in summary.to_dict("records"):
        cells = [r["check"]] + ([] if role == "kernel" else [r["expected"]]) + [
            r["runs"], r["errors"], f"{r['fails']}/{r['decided']}", _g(r["rate"]),
            f"[{_g(r['ci_low'])}, {_g(r['ci_high'])}]", _g(r["alpha"])]
        if not mutant:
            cells += [_g(r["ks_anticonservative_p"]), _g(r["ks_two_sided_p"]),
                      _g(r["p_below_0.1"], ".2f"), _g(r["p_below_0.5"], ".2f")]
        lines.append("| " + " | ".join(map(str, cells + [r["finding"]])) + " |")
    lines += ["", "Intervals are exact (Clopper-Pearson) binomial 95% intervals over the runs "
              "that decided (errors counted apart, never as passes). Where a check is expected "
              "to pass, its fail rate is a false-fail rate, to hold against the designed alpha: "
              "the check's share of the run's false-fail budget (0 for an exact check), the "
              "family alpha for the whole run; where it is expected to fail, the rate is its "
              "power."]
    if role != "mutant":
        lines += ["", "KS tests the checks' p-values against uniform. One-sided (alternative "
                  "\"greater\": p-values stochastically smaller than uniform) is the dangerous, "
                  "anti-conservative direction. The p-values are Bonferroni-adjusted and capped "
                  "at 1, hence conservative (stochastically larger than uniform): a two-sided "
                  "rejection in that direction is expected and not a defect."]
    return "\n".join(lines) + "\n"


def _command(args) -> str:
    return shlex.join(["sampling-harness", "calibrate", args.family, "--kernel", args.kernel,
                       "--runs", str(args.runs), "--budget", args.budget, "--device",
                       args.device, "--workers", str(args.workers), "--first-seed",
                       str(args.first_seed), *_passed_on(args)])


def _prepare(args, out: Path) -> None:
    """Make DIR (writable, else exit 2) and record the configuration; a DIR holding another
    calibration is refused."""
    from sampling_harness.report.writers import atomic_write, writable

    writable(out / "runs")
    config, path = {key: getattr(args, key) for key in CONFIG}, out / "calibrate.json"
    try:
        old = json.loads(path.read_text()) if path.exists() else config
    except (OSError, json.JSONDecodeError) as exc:
        raise HarnessError(f"{path} is unreadable ({exc}); give another --out") from None
    if old != config:
        changed = ", ".join(f"{k} {old.get(k)!r}" for k in CONFIG if old.get(k) != config[k])
        raise HarnessError(f"{out} holds a calibration with {changed}; give another --out")
    atomic_write(path, json.dumps(config, indent=1))


def run_calibrate(args, out: Path) -> int:
    from sampling_harness.report.writers import atomic_write

    meta = load(args.kernel, args.family).meta      # role; a mutant's caught_by checks
    role, caught_by = meta["role"], tuple(meta.get("caught_by", ()))
    _prepare(args, out)
    seeds = list(range(args.first_seed, args.first_seed + args.runs))
    todo = [s for s in seeds if not completed(out / "runs" / f"seed-{s}")]
    print(f"calibrate {args.family} / {args.kernel} ({role}): {len(seeds)} seeds, "
          f"{len(seeds) - len(todo)} already complete, {len(todo)} to run, "
          f"{args.workers} at a time")
    threads = max(1, (os.cpu_count() or 1) // args.workers)
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        futures = {pool.submit(run_one, check_command(args, s, out / "runs" / f"seed-{s}"),
                               out / "runs" / f"seed-{s}", threads): s for s in todo}
        for done, future in enumerate(as_completed(futures), 1):
            record = future.result()
            print(f"[{done}/{len(todo)}] seed {futures[future]}: exit {record['exit_code']} in "
                  f"{record['seconds']} s", flush=True)
    runs = collect(out, seeds)
    summary = summarize(runs, {**meta, "calibrated_budget": args.budget})
    device = next((d for d in runs["device"] if isinstance(d, str)), args.device)
    header = [f"# sampling-harness calibrate: {args.family} / {args.kernel}", "",
              f"kernel role: {role}" + (f", must be caught by {', '.join(caught_by)}"
                                        if caught_by else ""), "",
              f"command: `{_command(args)}`", "",
              f"N = {args.runs} runs (harness seeds {seeds[0]}..{seeds[-1]}), budget "
              f"`{args.budget}`, device `{device}`, date "
              f"{datetime.now(timezone.utc).isoformat(timespec='seconds')}"]
    text = to_markdown(summary, role, header)
    try:
        atomic_write(out / "runs.csv", runs.to_csv(index=False))
        atomic_write(out / "summary.csv", summary.to_csv(index=False))
        atomic_write(out / "summary.md", text)
    except OSError as exc:
        raise HarnessError(f"cannot write the calibration to {out}: "
                           f"{exc.strerror or exc}") from None
    print(text, end="")
    print(f"\nwritten: {out}/summary.md, summary.csv, runs.csv")
    return 0
