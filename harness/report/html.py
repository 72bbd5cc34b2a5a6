"""report.html: the run as one self-contained page (no network; figures as PNG data URIs).

Written by ``sampling_harness.report.writers.write_all`` after every check, like the other reports,
so its
figures are cached: ``FigureCache`` renders a plot dict (harness/report/plots.py) once, keyed by
a hash of its content, and later rewrites only re-embed the PNG. A figure that cannot be
drawn becomes a line of text in its section; it never breaks the run or the report.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from html import escape

from sampling_harness.report.plots import DPI, SIZE, render
from sampling_harness.verdict import Verdict, finished_of_selected, overall, run_verdict

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #222; }
h1 { font-size: 1.5em; margin: 0 0 .3em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
h3 { font-size: 1em; margin: 0 0 .4em; }
.badge { padding: .1em .5em; border-radius: 4px; color: #fff; font-weight: 600; }
.pass { background: #1e8449; } .fail { background: #c0392b; } .error { background: #7d3c98; }
.incomplete { background: #9a6209; } .badge.skipped { background: #5d6d7e; }
.banner { border: 2px solid #b9770e; background: #fdf2e9; padding: .5em 1em; margin: .5em 0 1em;
  max-width: 60em; font-weight: 600; }
.meta { border-collapse: collapse; margin: .3em 0 1em; }
.meta th { text-align: left; padding: .1em 1em .1em 0; font-weight: 600; color: #555; }
table.checks { border-collapse: collapse; width: 100%; font-size: 13px; }
.checks th, .checks td { border-bottom: 1px solid #ddd; padding: .3em .5em; vertical-align: top;
  text-align: left; }
.checks th { background: #f4f6f7; position: sticky; top: 0; white-space: nowrap; }
.checks td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.checks tr.bad td { background: #fdedec; } .checks tr.stated td { background: #fef9e7; }
.checks tr.skipped td { color: #4d5656; background: #f4f6f7; font-style: italic; }
.checks td.msg { max-width: 40em; overflow-wrap: anywhere; }
code { font: 12px ui-monospace, monospace; background: #f4f6f7; padding: .1em .3em;
  overflow-wrap: anywhere; }
section.check { border: 1px solid #ddd; border-radius: 6px; padding: .8em 1em; margin: 1em 0;
  max-width: 60em; }
section.check.bad { border-color: #c0392b; border-width: 2px; }
section.check img { display: block; margin-top: .5em; max-width: 100%; height: auto; }
.muted { color: #666; } .plot-error { color: #c0392b; }
"""


def _fmt(value, spec: str) -> str:
    """A number for the page: '-' when absent, 'nan' / 'inf' as such."""
    if value is None:
        return "-"
    try:
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return format(value, spec)
    except (TypeError, ValueError):
        return escape(str(value))


def plot_key(plot: dict) -> str:
    """The cache key of a plot dict: a hash of its content (non-finite values included)."""
    text = json.dumps(plot, sort_keys=True, default=str, allow_nan=True)
    return hashlib.sha1(text.encode()).hexdigest()


class FigureCache:
    """Rendered figures as data URIs (or the error that stopped one), by plot content.
    ``limit`` bounds the entries kept (oldest dropped first)."""

    def __init__(self, limit: int = 2048):
        self.limit = limit
        self.figures: dict[str, tuple[str | None, str | None]] = {}
        self.renders = 0

    def figure(self, plot: dict) -> tuple[str | None, str | None]:
        """(data URI, None), or (None, why it could not be drawn)."""
        key = plot_key(plot)
        if key not in self.figures:
            self.renders += 1
            try:
                png = render(plot)
                found = ("data:image/png;base64," + base64.b64encode(png).decode(), None)
            except Exception as exc:  # a figure must never break the report
                found = (None, f"{type(exc).__name__}: {exc}")
            if len(self.figures) >= self.limit:
                self.figures.pop(next(iter(self.figures)))
            self.figures[key] = found
        return self.figures[key]


CACHE = FigureCache()


def skipped_checks(meta: dict) -> list[dict]:
    """The records of the run's skipped checks (report.json's ``skipped``): family, kernel,
    name, check, reason (and target, role); none where the run says none."""
    skipped = meta.get("skipped")
    return [r for r in skipped if isinstance(r, dict)] if isinstance(skipped, list) else []


def rank(v: Verdict) -> int:
    """Where a check goes in the page: 0 errors, 1 verdicts the run did not expect (a kernel
    that failed, a mutant that passed), 2 failures it expected (a mutant caught), 3 passes."""
    if v.verdict == "error":
        return 0
    if not getattr(v, "as_expected", v.verdict == "pass"):
        return 1
    return 2 if v.verdict != "pass" else 3


def _badge(v: Verdict) -> str:
    """The coloured verdict, with what the run expected when that is not a pass."""
    expected = getattr(v, "expected", "pass")
    if expected == "pass":
        note = ""
    elif getattr(v, "as_expected", False):
        note = " <span class=muted>(as stated)</span>"
    else:
        note = f" <span class=muted>(stated: {escape(expected)})</span>"
    return f'<span class="badge {escape(v.verdict)}">{escape(v.verdict)}</span>{note}'


def _anchor(index: int, v: Verdict) -> str:
    safe = "".join(c if c.isalnum() else "-" for c in f"{v.family}-{v.kernel}-{v.name}")
    return f"c{index}-{safe}"


def _header(verdicts: list[Verdict], meta: dict) -> str:
    state = run_verdict(verdicts, meta)
    counts = {s: sum(v.verdict == s for v in verdicts) for s in ("pass", "fail", "error")}
    skipped = len(skipped_checks(meta))
    complete = ("complete" if meta.get("complete", True) else
                "INCOMPLETE: stopped, timed out, lost a worker, or still running")
    finished = overall(verdicts)
    rows = [("overall verdict", f'<span class="badge {state}">{state.upper()}</span>'),
            ("checks", f"{escape(finished_of_selected(verdicts, meta))}: {counts['pass']} "
                       f"pass, {counts['fail']} fail, {counts['error']} error"
                       + (f", {skipped} skipped" if skipped else "")),
            ("run", escape(complete)),
            ("budget", escape(str(meta.get("budget", "-")))),
            ("device", escape(str(meta.get("device", "-")))),
            ("harness seed", escape(str(meta.get("harness_seed", "-")))),
            ("family-wise false-fail budget (alpha)", _fmt(meta.get("family_alpha"), "g")),
            ("statistical checks sharing it", escape(str(meta.get("statistical_checks", "-")))),
            ("families", escape(", ".join(meta.get("families", [])) or "-")),
            ("started", escape(str(meta.get("started", "-"))))]
    if meta.get("workers"):
        rows.append(("spread over", f"{int(meta['workers'])} pytest-xdist workers"))
    if meta.get("world_size"):
        rows.append(("sharded over", f"{int(meta['world_size'])} torchrun ranks"))
    if meta.get("not_finished"):
        rows.append(("did not finish (yet)", "<br>".join(
            f"<code>{escape(str(n))}</code>" for n in meta["not_finished"])))
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    banner = "" if state != "incomplete" else (
        f'<div class="banner">INCOMPLETE: this run did not finish: '
        f"{escape(finished_of_selected(verdicts, meta))}. The finished checks say "
        f"{escape(finished.upper())}; the others have no verdict.</div>\n")
    return (f'<h1>sampling-harness report <span class="badge {state}">{state.upper()}</span>'
            f'</h1>\n{banner}<table class="meta">{body}</table>')


def _row(index: int, v: Verdict) -> str:
    effect = f"{_fmt(v.min_detectable_effect, '.3g')} {escape(v.effect)}".strip()
    name = escape(v.name)
    if isinstance(v.details.get("plot"), dict) or rank(v) < 3:
        name = f'<a href="#{_anchor(index, v)}">{name}</a>'
    cells = [escape(v.kernel), escape(v.family), name,
             _badge(v), _fmt(v.p_value, ".3g"), _fmt(v.alpha, ".2g"), _fmt(v.samples, ","), effect,
             _fmt(v.duration, ".1f"), escape(v.message)]
    classes = ["", "", "", "", "num", "num", "num", "", "num", "msg"]
    tds = "".join(f'<td class="{c}">{x}</td>' if c else f"<td>{x}</td>"
                  for c, x in zip(classes, cells, strict=True))
    return f'<tr class="{("bad", "bad", "stated", "")[rank(v)]}">{tds}</tr>'


def _skipped_row(record: dict) -> str:
    """A skipped check: its reason in the message column, no number."""
    cells = [escape(str(record.get(k, "-"))) for k in ("kernel", "family", "name")]
    cells += ['<span class="badge skipped">skipped</span>', *["-"] * 5,
              escape(str(record.get("reason", "")))]
    classes = ["", "", "", "", "num", "num", "num", "", "num", "msg"]
    tds = "".join(f'<td class="{c}">{x}</td>' if c else f"<td>{x}</td>"
                  for c, x in zip(classes, cells, strict=True))
    return f'<tr class="skipped">{tds}</tr>'


def _table(ordered: list[tuple[int, Verdict]], skipped: list[dict] = ()) -> str:
    head = ("kernel", "family", "check", "verdict", "p-value", "alpha", "samples",
            "min. detectable effect", "seconds", "message")
    rows = "\n".join([*(_row(i, v) for i, v in ordered), *map(_skipped_row, skipped)])
    return (f'<table class="checks"><thead><tr>{"".join(f"<th>{h}</th>" for h in head)}'
            f"</tr></thead><tbody>\n{rows}\n</tbody></table>")


def _failures(ordered: list[tuple[int, Verdict]]) -> str:
    bad = [(i, v) for i, v in ordered if rank(v) < 3]
    if not bad:
        return ""
    items = "".join(f'<li><a href="#{_anchor(i, v)}">{escape(v.kernel)} / {escape(v.name)}</a>'
                    f" {_badge(v)}: <code>{escape(v.reproduce)}</code></li>"
                    for i, v in bad)
    return f"<h2>Reproduce the failures</h2><ul>{items}</ul>"


def _section(index: int, v: Verdict, cache: FigureCache) -> str:
    plot = v.details.get("plot")
    if not isinstance(plot, dict) and rank(v) == 3:
        return ""
    parts = [f'<section class="check{" bad" if rank(v) < 2 else ""}" id="{_anchor(index, v)}">',
             f"<h3>{escape(v.family)} / {escape(v.kernel)} / {escape(v.name)}: {_badge(v)}"
             f"</h3>", f"<div>{escape(v.message)}</div>"]
    if rank(v) < 3:
        parts.append(f"<div>reproduce: <code>{escape(v.reproduce)}</code></div>")
    if isinstance(plot, dict):
        uri, error = cache.figure(plot)
        if uri is not None:
            width, height = (round(s * DPI) for s in SIZE)
            alt = escape(f"{plot.get('kind')} plot of {v.kernel} / {v.name}", quote=True)
            parts.append(f'<img class="plot" src="{uri}" alt="{alt}" width="{width}" '
                         f'height="{height}">')
        else:
            parts.append(f'<p class="plot-error">the figure could not be drawn: '
                         f"{escape(error)}</p>")
    else:
        parts.append('<p class="muted">no figure for this check</p>')
    return "\n".join(parts + ["</section>"])


def to_html(verdicts: list[Verdict], meta: dict, cache: FigureCache = CACHE) -> str:
    """The whole page: header, failures with their reproduce commands, the table of checks
    (errors and unexpected verdicts first, skipped checks last, with their reason), then a
    section per check with a figure or a failure."""
    ordered = sorted(enumerate(verdicts), key=lambda iv: rank(iv[1]))
    sections = "\n".join(s for s in (_section(i, v, cache) for i, v in ordered) if s)
    state = run_verdict(verdicts, meta)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="data:,">'
            f"<title>sampling-harness: {state.upper()}</title><style>{STYLE}</style></head>"
            f"<body>\n{_header(verdicts, meta)}\n{_failures(ordered)}\n<h2>Checks</h2>\n"
            f"{_table(ordered, skipped_checks(meta))}\n<h2>Details</h2>\n"
            f"{sections or '<p class=muted>no check of this run has a figure</p>'}\n"
            f"</body></html>\n")
